package main

import "fmt"

// palette colours status words with ANSI escapes when on: only on a
// terminal, and never when NO_COLOR is set to anything (https://no-color.org)
// or TERM is dumb.
type palette struct{ on bool }

// palette is the palette of stdout.
func (e env) palette() palette {
	get := e.getenv
	if get == nil {
		get = func(string) string { return "" }
	}
	return palette{on: get("NO_COLOR") == "" && get("TERM") != "dumb" && e.onTerminal()}
}

// status is the status word s padded to width, coloured by what it says
// when the palette is on (the padding stays outside the colour, so columns
// line up either way).
func (p palette) status(s string, width int) string {
	padded := fmt.Sprintf("%-*s", width, s)
	code := statusColours[s]
	if !p.on || code == "" {
		return padded
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m" + padded[len(s):]
}

// statusColours are the SGR parameters of the status words of runs,
// steps and progress: green went well, red went wrong, yellow wants a
// look or a person, cyan is under way, magenta was cut short.
var statusColours = map[string]string{
	"completed":       "32",
	"succeeded":       "32",
	"approved":        "32",
	"stopped":         "36",
	"started":         "36",
	"running":         "36",
	"continues":       "36",
	"waiting":         "33",
	"waits for":       "33",
	"escalated":       "33",
	"aborted":         "31",
	"failed":          "31",
	"rejected":        "31",
	"attempt failed:": "31",
	"interrupted":     "35",
}
