package approval

import (
	"bytes"
	"html/template"
	"strings"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// referencePage is the html/template the page was rendered with before
// appendPage wrote it by hand: the reference its bytes are compared with.
const referencePage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}} · Stepline</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{color:#57606a}dd{margin:0}
pre{white-space:pre-wrap;background:#f6f8fa;padding:.75rem;border-radius:6px}
button{font:inherit;padding:.5rem 1.25rem;margin-right:.5rem;border-radius:6px;border:1px solid #8c959f;cursor:pointer}
.approve{background:#1f883d;color:#fff;border-color:#1f883d}.reject{background:#cf222e;color:#fff;border-color:#cf222e}
input{font:inherit;padding:.35rem;width:16rem}input[type=radio]{width:auto}.note{color:#57606a}
fieldset{border:1px solid #d0d7de;border-radius:6px;margin:0 0 1rem}label{margin-right:1rem}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{with .Text}}<p>{{.}}</p>{{end}}
{{with .Page}}
<dl>
<dt>Pipeline</dt><dd>{{.Pipeline}}</dd>
<dt>Step</dt><dd>{{.Step}}</dd>
<dt>Run</dt><dd>{{.RunID}}</dd>
<dt>Requested</dt><dd>{{when .CreatedAt}}</dd>
<dt>Expires</dt><dd>{{when .ExpiresAt}}</dd>
</dl>
{{with .Message}}<pre>{{.}}</pre>{{end}}
{{if eq .State "pending"}}
<form method="post">
<p><label>Your name <input name="by" maxlength="200" autocomplete="name"></label></p>
{{if $.Marks}}<fieldset>
<legend>Is the step's answer right? (optional: it teaches the step's calibration)</legend>
<label><input type="radio" name="outcome" value="correct"> Correct</label>
<label><input type="radio" name="outcome" value="partial"> Partly</label>
<label><input type="radio" name="outcome" value="incorrect"> Incorrect</label>
<p><label>Notes <input name="notes" maxlength="4096"></label></p>
</fieldset>{{end}}
<p><button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="reject" type="submit" name="decision" value="reject">Reject</button></p>
<p class="note">The decision is final: this link decides once.</p>
</form>
{{else if eq .State "decided"}}
<p><strong>{{if eq .Decision "approved"}}Approved{{else}}Rejected{{end}}</strong> by {{.DecidedBy}}{{with whenp .DecidedAt}} at {{.}}{{end}}.</p>
{{with .Feedback}}<p>The step's answer is marked <strong>{{.Outcome}}</strong>{{with .Notes}}: {{.}}{{end}}.</p>{{end}}
{{else}}
<p><strong>Expired</strong> without a decision.</p>
{{end}}
{{end}}
</body>
</html>
`

func referenceTemplate(t *testing.T) *template.Template {
	t.Helper()
	return template.Must(template.New("approval").Funcs(template.FuncMap{
		"when": when,
		"whenp": func(t *time.Time) string {
			if t == nil {
				return ""
			}
			return when(*t)
		},
	}).Parse(referencePage))
}

// TestPageMatchesTemplate: appendPage writes, byte for byte, what the
// html/template page wrote, for every branch of the page (no page, each
// state, marks or not, feedback with and without notes) and for values
// holding every character html/template escapes, a NUL, invalid UTF-8
// and non-ASCII text.
func TestPageMatchesTemplate(t *testing.T) {
	ref := referenceTemplate(t)
	nasty := "<script>alert('x')</script> & \"q\" 1+1 \x00 \xff\xfe é ✓ &amp;"
	decidedAt := t0.Add(90 * time.Minute)
	base := PageData{ID: "id", RunID: "run-1", Pipeline: "deploy", Step: "review", Message: "Ship it?",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), State: StatePending}
	with := func(f func(*PageData)) *PageData {
		p := base
		f(&p)
		return &p
	}
	views := map[string]view{
		"no page":               {Title: "Not found", Text: "There is no approval at this address."},
		"no page, no text":      {Title: "Error"},
		"no page, nasty":        {Title: nasty, Text: nasty},
		"pending":               {Title: "Approval requested", Page: &base},
		"pending, marks":        {Title: "Approval requested", Page: &base, Marks: true},
		"pending, no message":   {Title: "Approval requested", Page: with(func(p *PageData) { p.Message = "" })},
		"pending, nasty":        {Title: nasty, Text: nasty, Marks: true, Page: with(func(p *PageData) { p.Pipeline, p.Step, p.RunID, p.Message = nasty, nasty, nasty, nasty })},
		"pending, empty fields": {Title: "", Page: &PageData{State: StatePending}},
		"approved": {Title: "Approval decided", Page: with(func(p *PageData) {
			p.State, p.Decision, p.DecidedBy, p.DecidedAt = StateDecided, "approved", "Ada", &decidedAt
		})},
		"rejected, no time": {Title: "Approval decided", Page: with(func(p *PageData) {
			p.State, p.Decision, p.DecidedBy = StateDecided, "rejected", nasty
		})},
		"decided, other decision": {Title: "Approval decided", Page: with(func(p *PageData) {
			p.State, p.Decision = StateDecided, "pending"
		})},
		"decided, feedback": {Title: "Approval decided", Marks: true, Page: with(func(p *PageData) {
			p.State, p.Decision, p.DecidedBy, p.DecidedAt = StateDecided, "approved", "Ada", &decidedAt
			p.Feedback = &store.Feedback{Outcome: store.Outcome("partial"), Notes: nasty}
		})},
		"decided, feedback without notes": {Title: "Approval decided", Page: with(func(p *PageData) {
			p.State, p.Decision, p.DecidedBy = StateDecided, "rejected", "Bob"
			p.Feedback = &store.Feedback{Outcome: store.Outcome("<correct>")}
		})},
		"expired":       {Title: "Approval expired", Page: with(func(p *PageData) { p.State = StateExpired })},
		"unknown state": {Title: "Link expired", Text: "gone", Page: with(func(p *PageData) { p.State = "" })},
	}
	for name, v := range views {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			if err := ref.Execute(&want, v); err != nil {
				t.Fatal(err)
			}
			got := appendPage(nil, v)
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("appendPage wrote\n%s\nhtml/template wrote\n%s", got, want.Bytes())
			}
		})
	}
}

// TestAppendHTMLText: each character html/template's text escaper
// replaces is replaced with its reference, at the start, in the middle and
// at the end of the text; everything else is copied. Apart from +, that
// is what template.HTMLEscapeString does.
func TestAppendHTMLText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain é ✓", "plain é ✓"},
		{"\x00", "\uFFFD"},
		{`"`, "&#34;"},
		{"&", "&amp;"},
		{"'", "&#39;"},
		{"+", "&#43;"},
		{"<", "&lt;"},
		{">", "&gt;"},
		{"<a>b</a>", "&lt;a&gt;b&lt;/a&gt;"},
		{"x&y", "x&amp;y"},
		{"\xff<\xfe", "\xff&lt;\xfe"},
	} {
		got := string(appendHTMLText([]byte("pre:"), tc.in))
		if got != "pre:"+tc.want {
			t.Errorf("appendHTMLText(%q) = %q, want %q", tc.in, strings.TrimPrefix(got, "pre:"), tc.want)
		}
		if want := template.HTMLEscapeString(tc.in); !strings.Contains(tc.in, "+") && got != "pre:"+want {
			t.Errorf("appendHTMLText(%q) = %q; template.HTMLEscapeString: %q", tc.in, got, want)
		}
	}
}
