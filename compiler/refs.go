package compiler

import "strings"

// templateRef is a reference to a step inside a Liquid template.
type templateRef struct {
	name   string // as written: "triage", "first_line_triage", "fan/3"
	offset int    // byte offset of "steps" in the template
}

// templateRefs finds the step references inside the {{ }} and {% %} tags of
// a Liquid template: steps.NAME, steps['NAME'] and steps["NAME"]. Text
// outside tags is not looked at.
func templateRefs(tpl string) []templateRef {
	var refs []templateRef
	for i := 0; i < len(tpl); {
		open := strings.Index(tpl[i:], "{")
		if open < 0 || i+open+1 >= len(tpl) {
			break
		}
		start := i + open
		var closer string
		switch tpl[start+1] {
		case '{':
			closer = "}}"
		case '%':
			closer = "%}"
		default:
			i = start + 1
			continue
		}
		end := strings.Index(tpl[start+2:], closer)
		if end < 0 {
			end = len(tpl) - start - 2
		}
		body := tpl[start+2 : start+2+end]
		refs = append(refs, scanRefs(body, start+2)...)
		i = start + 2 + end + len(closer)
	}
	return refs
}

// scanRefs finds steps references in the code of one tag, skipping string
// literals.
func scanRefs(code string, base int) []templateRef {
	var refs []templateRef
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c == '"' || c == '\'' {
			j := strings.IndexByte(code[i+1:], c)
			if j < 0 {
				return refs
			}
			i += j + 1
			continue
		}
		if !strings.HasPrefix(code[i:], "steps") || (i > 0 && isIdentByte(code[i-1])) {
			continue
		}
		j := i + len("steps")
		if j < len(code) && isIdentByte(code[j]) {
			continue
		}
		for j < len(code) && code[j] == ' ' {
			j++
		}
		if j >= len(code) {
			break
		}
		switch code[j] {
		case '.':
			k := j + 1
			for k < len(code) && (isIdentByte(code[k]) || code[k] == '-') {
				k++
			}
			if k > j+1 {
				refs = append(refs, templateRef{name: code[j+1 : k], offset: base + i})
			}
		case '[':
			k := j + 1
			for k < len(code) && code[k] == ' ' {
				k++
			}
			if k < len(code) && (code[k] == '\'' || code[k] == '"') {
				q := code[k]
				e := strings.IndexByte(code[k+1:], q)
				if e > 0 {
					refs = append(refs, templateRef{name: code[k+1 : k+1+e], offset: base + i})
				}
			}
		}
		i = j
	}
	return refs
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// dynamicSteps reports whether a template uses steps other than through
// steps.NAME or steps['NAME'].
func dynamicSteps(tpl string) bool {
	for i := 0; ; {
		j := strings.Index(tpl[i:], "steps")
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len("steps")
		i = end
		if at > 0 && isIdentByte(tpl[at-1]) || end < len(tpl) && isIdentByte(tpl[end]) {
			continue
		}
		rest := strings.TrimLeft(tpl[end:], " ")
		switch {
		case strings.HasPrefix(rest, "."):
		case strings.HasPrefix(rest, "['"), strings.HasPrefix(rest, `["`):
		default:
			if strings.Contains(tpl[:at], "{{") || strings.Contains(tpl[:at], "{%") {
				return true
			}
		}
	}
}
