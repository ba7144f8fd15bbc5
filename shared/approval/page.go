package approval

// The confirmation and result page is written by hand rather than with
// html/template: every function that links this package (callback,
// approval) would otherwise run html/template's and text/template's
// initialisers at every cold start, and the callback function parsed the
// template in its first invocation. Every value the page shows sits in
// HTML text (or the title's RCDATA), where html/template escapes with
// one table; htmlText applies the same table, so the bytes are the ones
// the template wrote (TestPageMatchesTemplate keeps that template and
// compares). The form posts to the page's own address.

// pageSize is the buffer a page starts with: the longest page (pending,
// with the mark's fieldset) and a message of a few hundred bytes.
const pageSize = 4096

const (
	pageHead = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>`
	pageStyle = ` · Stepline</title>
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
<h1>`
	pageForm = `
<form method="post">
<p><label>Your name <input name="by" maxlength="200" autocomplete="name"></label></p>
`
	pageMarks = `<fieldset>
<legend>Is the step's answer right? (optional: it teaches the step's calibration)</legend>
<label><input type="radio" name="outcome" value="correct"> Correct</label>
<label><input type="radio" name="outcome" value="partial"> Partly</label>
<label><input type="radio" name="outcome" value="incorrect"> Incorrect</label>
<p><label>Notes <input name="notes" maxlength="4096"></label></p>
</fieldset>`
	pageButtons = `
<p><button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="reject" type="submit" name="decision" value="reject">Reject</button></p>
<p class="note">The decision is final: this link decides once.</p>
</form>
`
	pageEnd = `
</body>
</html>
`
)

// appendPage appends the page that shows v to b.
func appendPage(b []byte, v view) []byte {
	b = append(b, pageHead...)
	b = appendHTMLText(b, v.Title)
	b = append(b, pageStyle...)
	b = appendHTMLText(b, v.Title)
	b = append(b, "</h1>\n"...)
	if v.Text != "" {
		b = append(b, "<p>"...)
		b = appendHTMLText(b, v.Text)
		b = append(b, "</p>"...)
	}
	b = append(b, '\n')
	if p := v.Page; p != nil {
		b = append(b, "\n<dl>\n"...)
		for _, f := range [...]struct{ term, value string }{
			{"Pipeline", p.Pipeline}, {"Step", p.Step}, {"Run", p.RunID},
			{"Requested", when(p.CreatedAt)}, {"Expires", when(p.ExpiresAt)},
		} {
			b = append(b, "<dt>"...)
			b = append(b, f.term...)
			b = append(b, "</dt><dd>"...)
			b = appendHTMLText(b, f.value)
			b = append(b, "</dd>\n"...)
		}
		b = append(b, "</dl>\n"...)
		if p.Message != "" {
			b = append(b, "<pre>"...)
			b = appendHTMLText(b, p.Message)
			b = append(b, "</pre>"...)
		}
		b = append(b, '\n')
		switch p.State {
		case StatePending:
			b = append(b, pageForm...)
			if v.Marks {
				b = append(b, pageMarks...)
			}
			b = append(b, pageButtons...)
		case StateDecided:
			b = append(b, "\n<p><strong>"...)
			if p.Decision == "approved" {
				b = append(b, "Approved"...)
			} else {
				b = append(b, "Rejected"...)
			}
			b = append(b, "</strong> by "...)
			b = appendHTMLText(b, p.DecidedBy)
			if p.DecidedAt != nil {
				b = append(b, " at "...)
				b = appendHTMLText(b, when(*p.DecidedAt))
			}
			b = append(b, ".</p>\n"...)
			if f := p.Feedback; f != nil {
				b = append(b, "<p>The step's answer is marked <strong>"...)
				b = appendHTMLText(b, string(f.Outcome))
				b = append(b, "</strong>"...)
				if f.Notes != "" {
					b = append(b, ": "...)
					b = appendHTMLText(b, f.Notes)
				}
				b = append(b, ".</p>"...)
			}
			b = append(b, '\n')
		default:
			b = append(b, "\n<p><strong>Expired</strong> without a decision.</p>\n"...)
		}
		b = append(b, '\n')
	}
	return append(b, pageEnd...)
}

// appendHTMLText appends s escaped for HTML text with html/template's
// table: NUL becomes U+FFFD and " & ' + < > character references. Every
// other byte, invalid UTF-8 included, is copied as it is.
func appendHTMLText(b []byte, s string) []byte {
	done := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		b = append(b, s[done:i]...)
		b = append(b, repl...)
		done = i + 1
	}
	return append(b, s[done:]...)
}
