package llmoutput

import (
	"fmt"
	"strings"
)

// Feedback limits: the bullets listed and the bytes of the reply echoed.
const (
	feedbackMaxBullets = 20
	feedbackEchoBytes  = 600
)

// Feedback is the message a re-ask sends after a rejected reply: one
// header, one bullet per error, a capped echo of the bad reply, and one
// closing instruction. It is "" for an accepted reply.
func (r Result) Feedback() string {
	return feedback(r.Outcome, r.Errors, r.echo)
}

func feedback(o Outcome, errs []FieldError, echo string) string {
	if o == Accepted {
		return ""
	}
	var b strings.Builder
	switch o {
	case Truncated:
		b.WriteString("Your previous reply was cut off before it was complete, so it was rejected:\n")
	case Refused:
		b.WriteString("Your previous reply was not an answer:\n")
	default:
		fmt.Fprintf(&b, "Your previous reply was rejected (%s):\n", plural(len(errs), "problem"))
	}
	for i, e := range errs {
		if i == feedbackMaxBullets {
			n, word := len(errs)-i, "problems"
			if n == 1 {
				word = "problem"
			}
			fmt.Fprintf(&b, "- and %d more %s\n", n, word)
			break
		}
		b.WriteString("- ")
		if e.Path != "" {
			b.WriteString(e.Path)
			b.WriteString(": ")
		}
		b.WriteString(e.Message)
		b.WriteString(" [")
		b.WriteString(e.Code)
		b.WriteString("]\n")
	}
	echo = strings.TrimSpace(echo)
	switch {
	case echo == "":
		b.WriteString("Your reply was empty.\n")
	case len(echo) > feedbackEchoBytes:
		fmt.Fprintf(&b, "Your reply began (first %d of %d bytes):\n", feedbackEchoBytes, len(echo))
		writeQuoted(&b, capText(echo, feedbackEchoBytes))
	default:
		b.WriteString("Your reply was:\n")
		writeQuoted(&b, echo)
	}
	if o == Truncated {
		b.WriteString("Reply again, more briefly, with exactly one complete JSON object that matches the required schema, and nothing before or after it.")
	} else {
		b.WriteString("Reply again with exactly one JSON object that matches the required schema, and nothing before or after it: no prose, no code fence.")
	}
	return b.String()
}

// writeQuoted writes s between fence lines long enough that no fence in s
// closes them.
func writeQuoted(b *strings.Builder, s string) {
	fence := "````"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	b.WriteString(fence)
	b.WriteByte('\n')
	b.WriteString(s)
	b.WriteByte('\n')
	b.WriteString(fence)
	b.WriteByte('\n')
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
