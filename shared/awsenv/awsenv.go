package awsenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Environment variables Load reads.
const (
	EnvRegion             = "AWS_REGION"
	EnvDefaultRegion      = "AWS_DEFAULT_REGION"
	EnvAccessKeyID        = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey    = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken       = "AWS_SESSION_TOKEN"
	EnvAccountID          = "AWS_ACCOUNT_ID"
	EnvEndpointURL        = "AWS_ENDPOINT_URL"
	EnvIgnoreEndpointURLs = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
	EnvMaxAttempts        = "AWS_MAX_ATTEMPTS"
	EnvRetryMode          = "AWS_RETRY_MODE"
)

// ErrNoCredentials is returned by Load when the environment holds no
// static credentials.
var ErrNoCredentials = errors.New("no AWS credentials in the environment: " +
	EnvAccessKeyID + " and " + EnvSecretAccessKey + " are unset (Lambda sets them from the execution role; " +
	"elsewhere set them for the process, shared config files and profiles are not read)")

// Load builds an aws.Config from environ, a list of KEY=value entries as
// os.Environ returns them. Empty values count as unset. It fails when the
// region or the credentials are missing, and when a setting is malformed;
// errors name the variable, never a credential.
func Load(environ []string) (aws.Config, error) {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			env[k] = v
		}
	}

	cfg := aws.Config{HTTPClient: awshttp.NewBuildableClient()}
	cfg.Region = env[EnvRegion]
	if cfg.Region == "" {
		cfg.Region = env[EnvDefaultRegion]
	}
	if cfg.Region == "" {
		return aws.Config{}, fmt.Errorf("load AWS environment: no region: %s and %s are unset", EnvRegion, EnvDefaultRegion)
	}

	key, secret := env[EnvAccessKeyID], env[EnvSecretAccessKey]
	switch {
	case key == "" && secret == "":
		return aws.Config{}, fmt.Errorf("load AWS environment: %w", ErrNoCredentials)
	case key == "":
		return aws.Config{}, fmt.Errorf("load AWS environment: %s is set but %s is not", EnvSecretAccessKey, EnvAccessKeyID)
	case secret == "":
		return aws.Config{}, fmt.Errorf("load AWS environment: %s is set but %s is not", EnvAccessKeyID, EnvSecretAccessKey)
	}
	creds := credentials.NewStaticCredentialsProvider(key, secret, env[EnvSessionToken])
	creds.Value.AccountID = env[EnvAccountID]
	cfg.Credentials = creds

	src := endpoints{services: map[string]string{}}
	if v, ok := env[EnvIgnoreEndpointURLs]; ok {
		switch {
		case strings.EqualFold(v, "true"):
			src.ignore = true
		case !strings.EqualFold(v, "false"):
			return aws.Config{}, fmt.Errorf("load AWS environment: %s=%q: want true or false", EnvIgnoreEndpointURLs, v)
		}
	}
	for k, v := range env {
		service, ok := strings.CutPrefix(k, EnvEndpointURL)
		if !ok || service == "_" || (service != "" && !strings.HasPrefix(service, "_")) {
			continue
		}
		if err := checkURL(v); err != nil {
			return aws.Config{}, fmt.Errorf("load AWS environment: %s: %w", k, err)
		}
		if service == "" {
			if !src.ignore {
				cfg.BaseEndpoint = aws.String(v)
			}
			continue
		}
		src.services[service[1:]] = v
	}
	cfg.ConfigSources = []any{src}

	if v, ok := env[EnvMaxAttempts]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return aws.Config{}, fmt.Errorf("load AWS environment: %s=%q: want a positive whole number", EnvMaxAttempts, v)
		}
		cfg.RetryMaxAttempts = n
	}
	if v, ok := env[EnvRetryMode]; ok {
		mode, err := aws.ParseRetryMode(v)
		if err != nil {
			return aws.Config{}, fmt.Errorf("load AWS environment: %s=%q: want standard or adaptive", EnvRetryMode, v)
		}
		cfg.RetryMode = mode
	}
	return cfg, nil
}

// checkURL accepts absolute http and https URLs with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL", s)
	}
	return nil
}

// EnvName returns the AWS_ENDPOINT_URL_<SERVICE> variable of the service
// with the given SDK ID: "Secrets Manager" → AWS_ENDPOINT_URL_SECRETS_MANAGER.
func EnvName(sdkID string) string {
	return EnvEndpointURL + "_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_")
}

// Endpoint returns the endpoint URL configured in cfg for the service with
// the given SDK ID ("DynamoDB", "Secrets Manager", "SSM"), resolved as the
// SDK's service clients resolve it: the service's own setting, else
// cfg.BaseEndpoint, else "" (the service's regional endpoint). It reads
// cfg's config sources, so it answers for a config from Load as well as
// for one from the SDK's config package.
func Endpoint(cfg aws.Config, sdkID string) string {
	ctx := context.Background()
	for _, s := range cfg.ConfigSources {
		if p, ok := s.(interface {
			GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error)
		}); ok {
			if ignore, found, err := p.GetIgnoreConfiguredEndpoints(ctx); err == nil && found {
				if ignore {
					return ""
				}
				break
			}
		}
	}
	for _, s := range cfg.ConfigSources {
		if p, ok := s.(interface {
			GetServiceBaseEndpoint(context.Context, string) (string, bool, error)
		}); ok {
			if v, found, err := p.GetServiceBaseEndpoint(ctx, sdkID); err == nil && found {
				return v
			}
		}
	}
	if cfg.BaseEndpoint != nil {
		return *cfg.BaseEndpoint
	}
	return ""
}

// endpoints is the config source that answers the SDK service clients'
// questions about configured endpoints. Its two methods are the ones the
// SDK looks for in aws.Config.ConfigSources.
type endpoints struct {
	ignore   bool
	services map[string]string // normalised SDK ID → URL
}

// GetServiceBaseEndpoint returns the AWS_ENDPOINT_URL_<SERVICE> setting of
// the service with the given SDK ID.
func (e endpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if e.ignore {
		return "", false, nil
	}
	v, ok := e.services[strings.TrimPrefix(EnvName(sdkID), EnvEndpointURL+"_")]
	return v, ok, nil
}

// GetIgnoreConfiguredEndpoints reports AWS_IGNORE_CONFIGURED_ENDPOINT_URLS.
func (e endpoints) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return e.ignore, e.ignore, nil
}
