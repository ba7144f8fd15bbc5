package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stepline/stepline/internal/lazyregexp"
)

// Providers maps provider names to where their models are called.
type Providers map[string]Provider

// BuiltinProviders are the providers every project knows, with their
// defaults; stepline.yaml's providers: may change their base_url, api_key
// (and bedrock's region), and add others.
func BuiltinProviders() Providers {
	return Providers{
		"anthropic":  {API: APIAnthropic, APIKey: "${ANTHROPIC_API_KEY}"},
		"bedrock":    {API: APIBedrock},
		"openai":     {API: APIGateway, BaseURL: "https://api.openai.com/v1", APIKey: "${OPENAI_API_KEY}"},
		"openrouter": {API: APIGateway, BaseURL: "https://openrouter.ai/api/v1", APIKey: "${OPENROUTER_API_KEY}"},
		"ollama":     {API: APIGateway, BaseURL: "http://localhost:11434/v1"},
	}
}

// Names lists the provider names, sorted.
func (ps Providers) Names() []string {
	out := make([]string, 0, len(ps))
	for n := range ps {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ProviderNameRE is what a provider's name may be: the part of a model
// string before its first slash.
var ProviderNameRE = lazyregexp.New(`^[a-z][a-z0-9_-]{0,39}$`)

// referenceOnly are providers of the reference gateway that Stepline does
// not build in; a project declares them (OpenAI-compatible) to use them.
var referenceOnly = []string{"azure", "google", "ollama-cloud", "ollama-local", "yolo"}

// SplitModel splits a model string "<provider>/<model>". A string whose
// part before the first slash is no provider name (no slash at all, or a
// Bedrock ARN such as arn:aws:bedrock:…:foundation-model/…) has no
// provider: open reports it, and the whole string is the model.
func SplitModel(s string) (provider, model string, open bool) {
	p, m, ok := strings.Cut(s, "/")
	if !ok || !ProviderNameRE.MatchString(p) {
		return "", s, true
	}
	return p, m, false
}

// Resolve returns the endpoint of model string s. A model naming its
// provider is called through that provider; one without (open) through
// transport, the step executor's own endpoint, whose Model it fills in.
// An unknown provider is an error that lists the known ones.
func (ps Providers) Resolve(s string, transport Endpoint) (Endpoint, error) {
	name, model, open := SplitModel(s)
	if open {
		e := transport
		e.Model = s
		return e, nil
	}
	if model == "" {
		return Endpoint{}, fmt.Errorf("model %q names no model after %q", s, name+"/")
	}
	p, ok := ps[name]
	if !ok {
		hint := DidYouMean(name, ps.Names())
		if hint == "" && slices.Contains(referenceOnly, name) {
			hint = ": declare it under providers: in stepline.yaml with its base_url (an OpenAI-compatible endpoint)"
		}
		return Endpoint{}, fmt.Errorf("model %q: unknown provider %q (known: %s)%s", s, name, strings.Join(ps.Names(), ", "), hint)
	}
	return Endpoint{Provider: name, API: p.API, Model: model, BaseURL: p.BaseURL, APIKey: p.APIKey, Region: p.Region}, nil
}

// TemperatureMax is the highest temperature an API takes.
func TemperatureMax(api string) float64 {
	if api == APIGateway {
		return 2
	}
	return 1
}
