package infra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/shared/catalog"
)

// bundleName is the name of the group's bundle under catalog.Path: "core"
// for the pipelines kept in the core stack, else the pipeline stack's
// number.
func (g *group) bundleName() string {
	if g.inCore() {
		return "core"
	}
	return fmt.Sprintf("%02d", g.index)
}

// addBundle publishes the group's pipeline files for the ingest function
// (package shared/catalog): the bundle document as a file asset, a
// parameter naming its object, and the grant to read that one object.
// They are in the group's stack, so a change to its pipelines changes no
// other stack; the core only grants listing the parameters' path.
func (g *group) addBundle() {
	b := g.b
	files := make([]catalog.File, 0, len(g.machines))
	for _, m := range g.machines {
		files = append(files, b.cfg.sources[m.p.Name])
	}
	path, err := stageBundle(filepath.Join(b.cfg.props.AssetDir, "bundles"), files)
	if err != nil {
		b.errs = append(b.errs, err)
		return
	}
	asset := awss3assets.NewAsset(g.stack, jsii.String("PipelineBundle"), &awss3assets.AssetProps{
		Path:        jsii.String(path),
		DisplayName: jsii.String("Stepline pipeline bundle " + g.bundleName()),
	})
	awsssm.NewStringParameter(g.stack, jsii.String("PipelineBundleParameter"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(catalog.ParameterName(b.cfg.names.prefix, g.bundleName())),
		StringValue:   asset.S3ObjectUrl(),
		Description:   jsii.String("Stepline: the pipeline files of this stack, for the ingest function"),
		Tier:          awsssm.ParameterTier_STANDARD,
	})
	g.grant(FunctionIngest, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadPipelineBundle"),
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(*asset.Bucket().ArnForObjects(asset.S3ObjectKey())),
	}))
}

// grantBundles lets the ingest function list the deployment's bundle
// parameters: one path, whatever the pipelines.
func (b *builder) grantBundles() {
	b.roles[FunctionIngest].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:     jsii.String("ListPipelineBundles"),
		Actions: jsii.Strings("ssm:GetParametersByPath"),
		Resources: jsii.Strings(*b.stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("ssm"),
			Resource:     jsii.String("parameter"),
			ResourceName: jsii.String(catalog.Path(b.cfg.names.prefix)[1:]),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})),
	}))
}

// stageBundle writes the bundle document of files as <dir>/<sha256>.json
// (a name of its content: synths of other pipelines never overwrite it
// with other bytes) and returns its path.
func stageBundle(dir string, files []catalog.File) (string, error) {
	doc, err := catalog.Encode(files)
	if err != nil {
		return "", fmt.Errorf("bundle pipelines for ingest: %w", err)
	}
	sum := sha256.Sum256(doc)
	path := filepath.Join(dir, hex.EncodeToString(sum[:])+".json")
	if old, err := os.ReadFile(path); err == nil && string(old) == string(doc) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bundle pipelines for ingest: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".bundle-*")
	if err != nil {
		return "", fmt.Errorf("bundle pipelines for ingest: %w", err)
	}
	_, err = tmp.Write(doc)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("bundle pipelines for ingest: %w", err)
	}
	return path, nil
}
