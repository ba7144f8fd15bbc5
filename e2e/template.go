package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/stepline/stepline/infra/assembly"
)

// Unsupported are the resource types of the synthesized template that
// moto's CloudFormation cannot create (create-stack fails, or answers
// HTTP 500 and rolls nothing back), with what checks them instead.
var Unsupported = map[string]string{
	"AWS::ApiGatewayV2::Api":         "no API Gateway v2 in moto: the tier hands the functions API Gateway's events; infra tests assert the routes",
	"AWS::ApiGatewayV2::Integration": "as AWS::ApiGatewayV2::Api",
	"AWS::ApiGatewayV2::Route":       "as AWS::ApiGatewayV2::Api",
	"AWS::ApiGatewayV2::Stage":       "as AWS::ApiGatewayV2::Api",
	"AWS::CloudWatch::Alarm":         "not in moto's CloudFormation; infra tests assert the alarms and their metrics",
	"AWS::S3::BucketPolicy":          "not in moto's CloudFormation; infra tests and cdk-nag assert the TLS-only policies",
	"AWS::SNS::TopicPolicy":          "not in moto's CloudFormation; infra tests assert the policy",
	"AWS::SQS::QueuePolicy":          "not in moto's CloudFormation; infra tests assert the policy",
	"AWS::CDK::Metadata":             "CDK's own analytics resource, not an AWS one",
	"AWS::SecretsManager::Secret":    "not in moto's CloudFormation: created through the API first (GenerateSecretString honoured), and every Ref becomes its ARN",
}

// Transform is how the synthesized template becomes one moto's
// CloudFormation creates, and runs in the box:
//
//   - resources of the Unsupported types are removed (a secret is
//     created first, see Secrets), and so are DependsOn entries naming
//     them;
//   - a Ref or Fn::GetAtt of a removed resource (in properties, outputs,
//     Fn::Sub strings) becomes a stub: the API's endpoint (GetAtt
//     ApiEndpoint) is APIEndpoint, any other reference "box-removed-<id>";
//   - a Ref of a removed secret becomes the ARN of the secret created in
//     its place (Secrets);
//   - every Lambda function's environment gets Env (the box's proxy and
//     Bedrock endpoint, so that nothing a pipeline calls leaves the
//     machine).
//
// Everything else is created as synthesized: the table, bucket, queue,
// topic, key, log groups, roles and policies, the functions (from the
// assets uploaded to the CDK bootstrap bucket, see Assets), the Events
// rules and the state machines with their DefinitionSubstitutions.
type Transform struct {
	APIEndpoint string
	Secrets     map[string]string // logical ID of a removed secret → ARN of the one created
	Env         map[string]string
}

// TransformReport says what Apply changed.
type TransformReport struct {
	Removed    map[string]string // logical ID → type
	Stubbed    []string          // "<resource or output>: Ref X" replaced
	Secrets    []string          // logical IDs of secrets replaced by ARNs
	Functions  []string          // logical IDs of functions given Env
	Substitute map[string]int    // state machine → number of DefinitionSubstitutions
}

// SecretsToCreate lists the template's secrets: logical ID → its
// GenerateSecretString settings (nil when it has a SecretString).
func SecretsToCreate(tpl map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range resources(tpl) {
		if r["Type"] != "AWS::SecretsManager::Secret" {
			continue
		}
		props, _ := r["Properties"].(map[string]any)
		gen, _ := props["GenerateSecretString"].(map[string]any)
		out[id] = gen
	}
	return out
}

// GenerateSecret makes a value as GenerateSecretString would: letters and
// digits (the template excludes punctuation), of PasswordLength (32 by
// default).
func GenerateSecret(gen map[string]any) string {
	n := 32
	if l, ok := gen["PasswordLength"].(float64); ok && l > 0 {
		n = int(l)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func resources(tpl map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	rs, _ := tpl["Resources"].(map[string]any)
	for id, v := range rs {
		if r, ok := v.(map[string]any); ok {
			out[id] = r
		}
	}
	return out
}

// Apply transforms tpl in place.
func (tr Transform) Apply(tpl map[string]any) (TransformReport, error) {
	rep := TransformReport{Removed: map[string]string{}, Substitute: map[string]int{}}
	rs, ok := tpl["Resources"].(map[string]any)
	if !ok {
		return rep, fmt.Errorf("template: no Resources")
	}
	for id, r := range resources(tpl) {
		typ, _ := r["Type"].(string)
		if _, drop := Unsupported[typ]; !drop {
			continue
		}
		if typ == "AWS::SecretsManager::Secret" {
			if _, made := tr.Secrets[id]; !made {
				return rep, fmt.Errorf("template: secret %s was not created first (Transform.Secrets)", id)
			}
			rep.Secrets = append(rep.Secrets, id)
		}
		rep.Removed[id] = typ
		delete(rs, id)
	}
	sort.Strings(rep.Secrets)
	for id, r := range resources(tpl) {
		if deps := dependsOn(r["DependsOn"]); len(deps) > 0 {
			var kept []any
			for _, d := range deps {
				if _, gone := rep.Removed[d]; !gone {
					kept = append(kept, d)
				}
			}
			if len(kept) == 0 {
				delete(r, "DependsOn")
			} else {
				r["DependsOn"] = kept
			}
		}
		r["Properties"] = tr.rewrite(r["Properties"], id, &rep)
		switch r["Type"] {
		case "AWS::Lambda::Function":
			props, _ := r["Properties"].(map[string]any)
			if props == nil {
				continue
			}
			env, _ := props["Environment"].(map[string]any)
			if env == nil {
				env = map[string]any{}
				props["Environment"] = env
			}
			vars, _ := env["Variables"].(map[string]any)
			if vars == nil {
				vars = map[string]any{}
				env["Variables"] = vars
			}
			for k, v := range tr.Env {
				vars[k] = v
			}
			rep.Functions = append(rep.Functions, id)
		case "AWS::StepFunctions::StateMachine":
			props, _ := r["Properties"].(map[string]any)
			subs, _ := props["DefinitionSubstitutions"].(map[string]any)
			rep.Substitute[id] = len(subs)
		}
	}
	sort.Strings(rep.Functions)
	if outs, ok := tpl["Outputs"].(map[string]any); ok {
		for id, o := range outs {
			outs[id] = tr.rewrite(o, "output "+id, &rep)
		}
	}
	sort.Strings(rep.Stubbed)
	return rep, nil
}

func dependsOn(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

var subRef = regexp.MustCompile(`\$\{([A-Za-z0-9]+)(\.[A-Za-z0-9.]+)?\}`)

// rewrite replaces references to removed resources in v.
func (tr Transform) rewrite(v any, where string, rep *TransformReport) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if ref, ok := x["Ref"].(string); ok {
				if arn, ok := tr.Secrets[ref]; ok {
					return arn
				}
				if _, gone := rep.Removed[ref]; gone {
					rep.Stubbed = append(rep.Stubbed, where+": Ref "+ref)
					return "box-removed-" + ref
				}
			}
			if ga, ok := x["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
				id, _ := ga[0].(string)
				attr, _ := ga[1].(string)
				if _, gone := rep.Removed[id]; gone {
					rep.Stubbed = append(rep.Stubbed, where+": GetAtt "+id+"."+attr)
					if attr == "ApiEndpoint" {
						return tr.APIEndpoint
					}
					return "box-removed-" + id
				}
			}
			if sub, ok := x["Fn::Sub"].(string); ok {
				return map[string]any{"Fn::Sub": tr.rewriteSub(sub, where, rep)}
			}
			if sub, ok := x["Fn::Sub"].([]any); ok && len(sub) > 0 {
				if s, ok := sub[0].(string); ok {
					sub[0] = tr.rewriteSub(s, where, rep)
				}
			}
		}
		for k, e := range x {
			x[k] = tr.rewrite(e, where, rep)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = tr.rewrite(e, where, rep)
		}
		return x
	}
	return v
}

func (tr Transform) rewriteSub(s, where string, rep *TransformReport) string {
	return subRef.ReplaceAllStringFunc(s, func(m string) string {
		g := subRef.FindStringSubmatch(m)
		id := g[1]
		if arn, ok := tr.Secrets[id]; ok && g[2] == "" {
			return arn
		}
		if _, gone := rep.Removed[id]; gone {
			rep.Stubbed = append(rep.Stubbed, where+": Sub ${"+id+g[2]+"}")
			if g[2] == ".ApiEndpoint" {
				return tr.APIEndpoint
			}
			return "box-removed-" + id
		}
		return m
	})
}

// Asset is a file asset of the cloud assembly, as the box's bootstrap
// bucket holds it.
type Asset struct {
	Key      string // the object key the template names
	Function string // the function whose bootstrap it holds (bin/lambda/<fn>); "" for a file
	Body     []byte // the zipped code, or the file
}

// Assets reads the file assets listed in cdk.out/<stack>.assets.json, as
// cdk deploy publishes them: a file (the stack's pipeline bundle) as it
// is, a directory (a function's code) zipped, with one change: the bootstrap, built for
// arm64 (what the stack deploys), is replaced by the same function's
// amd64 build (bin/lambda-amd64/<fn>/bootstrap), which this machine runs
// (moto ignores Architectures). The function is recognised by comparing
// the asset's bootstrap with bin/lambda/<fn>/bootstrap.
func Assets(cdkOut, stack string, t Tools) ([]Asset, error) {
	files, err := assembly.FileAssets(cdkOut, stack)
	if err != nil {
		return nil, err
	}
	arm := map[string]string{} // sha of bin/lambda/<fn>/bootstrap → fn
	dirs, _ := filepath.Glob(filepath.Join(t.Root, "bin", "lambda", "*", "bootstrap"))
	for _, d := range dirs {
		if sum, err := fileHash(d); err == nil {
			arm[sum] = filepath.Base(filepath.Dir(d))
		}
	}
	var out []Asset
	for _, f := range files {
		switch f.Packaging {
		case assembly.PackagingFile:
			b, err := readFile(filepath.Join(cdkOut, f.Path))
			if err != nil {
				return nil, fmt.Errorf("asset %s: %w", f.Path, err)
			}
			out = append(out, Asset{Key: f.ObjectKey, Body: b})
		case assembly.PackagingZip:
			dir := filepath.Join(cdkOut, f.Path)
			sum, err := fileHash(filepath.Join(dir, "bootstrap"))
			if err != nil {
				return nil, fmt.Errorf("asset %s: %w", f.Path, err)
			}
			fn, ok := arm[sum]
			if !ok {
				return nil, fmt.Errorf("asset %s: its bootstrap is none of bin/lambda/*/bootstrap: run make build synth", f.Path)
			}
			z, err := zipAsset(dir, t.bootstrap(fn))
			if err != nil {
				return nil, fmt.Errorf("asset %s: %w", f.Path, err)
			}
			out = append(out, Asset{Key: f.ObjectKey, Function: fn, Body: z})
		}
	}
	return out, nil
}

func fileHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// zipAsset zips an asset directory, its bootstrap replaced by bootstrap.
func zipAsset(dir, bootstrap string) ([]byte, error) {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		src, mode := path, os.FileMode(0o644)
		if rel == "bootstrap" {
			src, mode = bootstrap, 0o755
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: filepath.ToSlash(rel), Method: zip.Store}
		h.SetMode(mode)
		w, err := z.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
