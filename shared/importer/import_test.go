package importer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stepline/stepline/shared/project"
	"github.com/stepline/stepline/shared/secret"
)

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportIdempotent: a second import of the same source changes
// nothing, and a file changed by a person is not overwritten without
// Force.
func TestImportIdempotent(t *testing.T) {
	dest := t.TempDir()
	if _, err := Import("testdata/vectorstep", dest, Options{}); err != nil {
		t.Fatal(err)
	}
	first := readTree(t, dest)
	res, err := Import("testdata/vectorstep", dest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Action != "unchanged" {
			t.Errorf("second import: %s %s", f.Action, f.Path)
		}
	}
	if second := readTree(t, dest); len(second) != len(first) {
		t.Fatalf("second import has %d files, first %d", len(second), len(first))
	} else {
		for p, b := range first {
			if second[p] != b {
				t.Errorf("%s differs after the second import", p)
			}
		}
	}

	edited := filepath.Join(dest, "pipelines", "alert-triage.yaml")
	if err := os.WriteFile(edited, []byte(first[filepath.Join("pipelines", "alert-triage.yaml")]+"# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Import("testdata/vectorstep", dest, Options{})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Paths) != 1 || ce.Paths[0] != "pipelines/alert-triage.yaml" {
		t.Fatalf("import over an edited file: %v, want a conflict naming it", err)
	}
	if b, _ := os.ReadFile(edited); !strings.HasSuffix(string(b), "# edited\n") {
		t.Fatal("the edited file was overwritten")
	}
	if _, err := Import("testdata/vectorstep", dest, Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(edited); string(b) != first[filepath.Join("pipelines", "alert-triage.yaml")] {
		t.Fatal("--force did not restore the file")
	}
}

// TestImportRefusesForeignFiles: a file in DEST the importer did not
// write is refused, and nothing is written.
func TestImportRefusesForeignFiles(t *testing.T) {
	dest := t.TempDir()
	if err := os.WriteFile(filepath.Join(dest, "stepline.yaml"), []byte("pipelines: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Import("testdata/vectorstep", dest, Options{})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a conflict", err)
	}
	if _, err := os.Stat(filepath.Join(dest, "pipelines")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("pipelines were written despite the conflict")
	}
}

// TestImportSecrets: references stay references, never resolved; a
// secret written out in config.yaml is not copied.
func TestImportSecrets(t *testing.T) {
	t.Setenv("VECTORSTEP_GATEWAY_TOKEN", "resolved-gateway-secret")
	dest := t.TempDir()
	res, err := Import("testdata/vectorstep", dest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, b := range readTree(t, dest) {
		all += b
	}
	for _, bad := range []string{"pay-literal-token-5f2c", "resolved-gateway-secret"} {
		if strings.Contains(all, bad) {
			t.Errorf("DEST holds %q", bad)
		}
	}
	for _, want := range []string{`token: "${VECTORSTEP_GATEWAY_TOKEN}"`, `token: "${STEPLINE_TOKEN_PAYMENTS}"`, `bot_token: "${TELEGRAM_BOT_TOKEN}"`, `chat_id: "-1001234567890"`} {
		if !strings.Contains(all, want) {
			t.Errorf("DEST lacks %s", want)
		}
	}
	found := false
	for _, n := range res.Notes {
		if n.Level == Person && strings.Contains(n.Msg, "STEPLINE_TOKEN_PAYMENTS") && n.File == "config.yaml" && n.Line == 43 {
			found = true
		}
		if strings.Contains(n.String(), "pay-literal-token-5f2c") {
			t.Errorf("a note holds the secret: %s", n)
		}
	}
	if !found {
		t.Error("the written-out token is not reported at config.yaml:43")
	}
}

// TestImportBounds: a source past the bounds is refused with a clear error.
func TestImportBounds(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "config.yaml"), []byte(strings.Repeat("#", MaxConfigBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(src, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v, want a size error", err)
	}
	if err := os.WriteFile(filepath.Join(src, "config.yaml"), []byte("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(src, t.TempDir(), Options{}); err == nil {
		t.Fatal("an alias bomb was accepted")
	}
}

func TestTelegramAccepted(t *testing.T) {
	yes := []byte(`{"definitions": {"notification": {"properties": {"channel": {"enum": ["log", "telegram"]}}}}}`)
	no := []byte(`{"definitions": {"notification": {"properties": {"channel": {"enum": ["log", "webhook"]}}}}}`)
	if !TelegramAccepted(yes) || TelegramAccepted(no) || TelegramAccepted([]byte("{")) {
		t.Error("TelegramAccepted misreads the schema")
	}
}

// TestImportApprovalRoutes: human_approval becomes stepline.yaml's
// human_approval with the same routing, no pipeline gets an approval
// notification action of its own, and what Stepline cannot send as
// written (Slack's Socket Mode, a bad chat ID) needs a person.
func TestImportApprovalRoutes(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string // in stepline.yaml
		person       int
	}{
		{"fallback", "notifications:\n  telegram: {bot_token: \"${BOT}\", chat_id: \"42\"}\n",
			[]string{"notifications:\n  telegram:\n    bot_token: \"${BOT}\"\n    chat_id: \"42\"\n"}, 0},
		{"telegram default", "human_approval:\n  default: {channel: telegram, telegram: {bot_token: \"${A}\", chat_id: \"-7\"}}\n",
			[]string{"human_approval:\n  default:\n    channel: telegram\n    telegram:\n      bot_token: \"${A}\"\n      chat_id: \"-7\"\n"}, 0},
		{"telegram from notifications", "notifications:\n  telegram: {bot_token: \"${BOT}\", chat_id: \"42\"}\nhuman_approval:\n  teams:\n    ops: {channel: telegram, telegram: {chat_id: \"-9\"}}\n",
			[]string{"  teams:\n    \"ops\":\n      channel: telegram\n      telegram:\n        bot_token: \"${BOT}\"\n        chat_id: \"-9\"\n"}, 0},
		{"telegram without a bot", "human_approval:\n  teams:\n    ops: {channel: telegram, telegram: {chat_id: \"-9\"}}\n", nil, 1},
		{"written-out token", "human_approval:\n  default: {channel: telegram, telegram: {bot_token: \"123:abc\", chat_id: \"-7\"}}\n",
			[]string{"bot_token: \"${TELEGRAM_APPROVAL_BOT_TOKEN}\""}, 1},
		{"bad chat id", "human_approval:\n  default: {channel: telegram, telegram: {bot_token: \"${A}\", chat_id: \"-0x7\"}}\n", nil, 1},
		{"slack team", "human_approval:\n  teams:\n    sre: {channel: slack, slack: {bot_token: \"${S}\", app_token: \"${AT}\", channel_id: C0123456789}}\n",
			[]string{"  teams:\n    \"sre\":\n      channel: slack\n      slack:\n        bot_token: \"${S}\"\n        signing_secret: \"${SLACK_SIGNING_SECRET}\"\n        channel_id: \"C0123456789\"\n"}, 1},
		{"slack channel name", "human_approval:\n  default: {channel: slack, slack: {bot_token: \"${S}\", channel_id: \"#ops\"}}\n", nil, 1},
		{"bad notifications chat id", "notifications:\n  telegram: {bot_token: \"${BOT}\", chat_id: \"ops\"}\n", nil, 1},
		{"msteams", "human_approval:\n  default: {channel: msteams, msteams: {webhook_url: \"${W}\"}}\n",
			[]string{"    channel: msteams\n    msteams:\n      webhook_url: \"${W}\"\n"}, 0},
		{"unknown channel", "human_approval:\n  default: {channel: email}\n", nil, 1},
		{"bad team name", "human_approval:\n  teams:\n    \"a b\": {channel: msteams, msteams: {webhook_url: \"${W}\"}}\n", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			for p, b := range map[string]string{
				"config.yaml":          tc.config,
				"pipelines/human.yaml": "name: human\nsteps:\n  - name: ok\n    executor: human\n",
			} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(src, p), []byte(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dest := t.TempDir()
			res, err := Import(src, dest, Options{TelegramChannel: true})
			if err != nil {
				t.Fatal(err)
			}
			tree := readTree(t, dest)
			written := tree["stepline.yaml"]
			if p := project.Parse(filepath.Join(dest, project.FileName), []byte(tree["stepline.yaml"])); len(p.Diagnostics) != 0 {
				t.Errorf("Stepline refuses the stepline.yaml written: %v\n%s", p.Diagnostics, tree["stepline.yaml"])
			}
			for _, w := range tc.want {
				if !strings.Contains(written, w) {
					t.Errorf("stepline.yaml lacks\n%s\n---\n%s", w, written)
				}
			}
			if tc.want == nil && (strings.Contains(written, "human_approval") || strings.Contains(written, "notifications")) {
				t.Errorf("stepline.yaml routes a channel it cannot send:\n%s", written)
			}
			if got := tree[filepath.Join("pipelines", "human.yaml")]; strings.Contains(got, "approval") {
				t.Errorf("the pipeline got an approval action:\n%s", got)
			}
			person := 0
			for _, n := range res.Notes {
				if n.Level == Person {
					person++
					if n.File != "config.yaml" || n.Line < 1 || n.Col < 1 {
						t.Errorf("note not positioned in config.yaml: %+v", n)
					}
				}
			}
			if person != tc.person {
				t.Errorf("%d notes need a person, want %d: %v", person, tc.person, res.Notes)
			}
		})
	}
}

// TestImportIntoSource: DEST may not be SRC, even with Force.
func TestImportIntoSource(t *testing.T) {
	src := t.TempDir()
	for p, b := range map[string]string{"config.yaml": "{}\n", "pipelines/a.yaml": "name: a\nsteps: []\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Import(src, src, Options{Force: true}); err == nil || !strings.Contains(err.Error(), "another directory") {
		t.Fatalf("got %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "pipelines", "a.yaml")); string(b) != "name: a\nsteps: []\n" {
		t.Fatal("the source was changed")
	}
}

// FuzzConvertFile: any pipeline file converts without a panic, and the
// output, when there is one, is YAML that reads back.
func FuzzConvertFile(f *testing.F) {
	for _, name := range []string{"alert-triage.yaml", "coverage.yaml", "fanout-report.yaml", "needs-a-person.yaml", "notify-telegram.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "vectorstep", "pipelines", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add([]byte("name: x\nsteps: {a: 1}\nnotifications: [1]\n"), true)
	f.Add([]byte("a: &a {when: x}\nsteps: [*a, {parallel: *a}, {fan_out: {over: 1}}]\n"), false)
	f.Fuzz(func(t *testing.T, src []byte, library bool) {
		imp := newImporter(parseConfig("config.yaml", nil), Options{})
		out, _ := imp.convertFile("p.yaml", src, library)
		if out == nil {
			return
		}
		var v any
		if err := yamlUnmarshal(out, &v); err != nil {
			t.Fatalf("the output does not read back: %v\n%s", err, out)
		}
	})
}

// TestConvertFileAliases: aliases and merge keys are expanded, so that
// dropping a field never leaves an alias without its anchor.
func TestConvertFileAliases(t *testing.T) {
	imp := newImporter(parseConfig("config.yaml", nil), Options{})
	src := "base: &b {executor: gateway, prompt_template: \"{{ x | upper }}\"}\nname: p\nsteps:\n  - <<: *b\n    name: one\n  - {<<: *b, name: two, executor: human}\n"
	out, _ := imp.convertFile("p.yaml", []byte(src), false)
	got := string(out)
	for _, want := range []string{"name: one\n    executor: gateway\n    prompt_template: \"{{ x | upcase }}\"", "{name: two, executor: human, prompt_template: \"{{ x | upcase }}\"}"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "*b") || strings.Contains(got, "&b") || strings.Contains(got, "\nbase:") {
		t.Errorf("an alias, anchor or the unknown field survived:\n%s", got)
	}
}

// TestConvertFileSyntaxError: a file that is not YAML is a note at the
// text that breaks it, not at the line before its enclosing block that
// the YAML library names.
func TestConvertFileSyntaxError(t *testing.T) {
	imp := newImporter(parseConfig("config.yaml", nil), Options{})
	src := "name: p\nsteps:\n  - name: a\n    executor: gateway\n    verifier:\n      executor: gateway\n    executor_config: {agent: x}\n      combination_strategy: veto\n"
	out, notes := imp.convertFile("p.yaml", []byte(src), false)
	if out != nil || len(notes) != 1 {
		t.Fatalf("output %q, notes %v", out, notes)
	}
	n := notes[0]
	if n.Line != 8 || n.Col != 7 || n.Level != Person || n.Msg != "not imported: invalid YAML: did not find expected key" {
		t.Errorf("note %d:%d %v %q, want 8:7 needing a person: not imported: invalid YAML: did not find expected key", n.Line, n.Col, n.Level, n.Msg)
	}
}

// TestImportConfigSyntaxError: a config.yaml that is not YAML is refused
// at the text that breaks it.
func TestImportConfigSyntaxError(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{"config.yaml": "executors:\n  gateway:\n    url: ws://gw\n   token: x\n"})
	_, err := Import(src, t.TempDir(), Options{})
	if err == nil || err.Error() != "config.yaml:4:4: did not find expected key" {
		t.Errorf("Import: %v", err)
	}
}

// TestImportWithoutLibrary: a source without a step library gives a
// project that loads without a warning (stepline.yaml named a steps
// directory the import never wrote, and every command warned of it).
func TestImportWithoutLibrary(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		steps bool
	}{
		{"no library", map[string]string{"config.yaml": "{}\n", "pipelines/a.yaml": "name: a\nsteps: [{name: s, executor: human}]\n"}, false},
		{"an empty library", map[string]string{"config.yaml": "{}\n", "pipelines/a.yaml": "name: a\nsteps: [{name: s, executor: human}]\n", "steps/README": "x"}, false},
		{"a library step", map[string]string{"config.yaml": "{}\n", "pipelines/a.yaml": "name: a\nsteps: [{name: s, executor: human}]\n", "steps/h.yaml": "name: h\nexecutor: human\n"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, dest := t.TempDir(), t.TempDir()
			writeTree(t, src, c.files)
			if _, err := Import(src, dest, Options{}); err != nil {
				t.Fatal(err)
			}
			p, err := project.Load(filepath.Join(dest, project.FileName))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Diagnostics) != 0 {
				t.Errorf("stepline.yaml: %v", p.Diagnostics)
			}
			if got := len(p.StepFiles) > 0; got != c.steps {
				t.Errorf("library steps loaded: %v, want %v", got, c.steps)
			}
		})
	}
}

// TestConvertFileTwoDocuments: the reference refused a pipeline file of
// two YAML documents; the import wrote the first and dropped the second
// unread.
func TestConvertFileTwoDocuments(t *testing.T) {
	imp := newImporter(parseConfig("config.yaml", nil), Options{})
	src := "name: p\nsteps: [{name: a, executor: human}]\n---\nname: q\nsteps: [{name: b, executor: human}]\n"
	out, notes := imp.convertFile("p.yaml", []byte(src), false)
	if out != nil || len(notes) != 1 {
		t.Fatalf("output %q, notes %v", out, notes)
	}
	if n := notes[0]; n.Line != 3 || n.Col != 1 || n.Level != Person || !strings.HasPrefix(n.Msg, "not imported: a second YAML document starts here") {
		t.Errorf("note %d:%d %v %q", n.Line, n.Col, n.Level, n.Msg)
	}
	// A trailing document marker is no second document.
	if out, notes := imp.convertFile("p.yaml", []byte("name: p\nsteps: [{name: a, executor: human}]\n---\n"), false); out == nil {
		t.Errorf("a trailing --- is not imported: %v", notes)
	}
}

// TestConvertFileDuplicateKeys: the reference's YAML loader kept the last
// of a key written twice in a mapping; the import keeps that one, once,
// and says so, where it wrote both (and validate refused the file).
func TestConvertFileDuplicateKeys(t *testing.T) {
	imp := newImporter(parseConfig("config.yaml", nil), Options{})
	src := "name: p\nsteps:\n  - name: a\n    executor: human\n    prompt_template: first\n    confidence_threshold: 0.5\n    prompt_template: second\n"
	out, notes := imp.convertFile("p.yaml", []byte(src), false)
	got := string(out)
	if !strings.Contains(got, "    prompt_template: second\n    confidence_threshold: 0.5\n") || strings.Contains(got, "first") {
		t.Errorf("output:\n%s", got)
	}
	found := false
	for _, n := range notes {
		found = found || n.Level == Check && n.Line == 7 && n.Col == 5 && strings.Contains(n.Msg, `"prompt_template"`)
	}
	if !found {
		t.Errorf("no note at 7:5 about the duplicate: %v", notes)
	}
}

// TestConvertOverText: the reference rendered over: to text and parsed
// it, so a list written into a var or a label worked there; in Stepline
// those hold text, which validate refuses to fan out over: the import
// says a person is needed, and converts a step's list as before.
func TestConvertOverText(t *testing.T) {
	for _, c := range []struct {
		name, over string
		person     bool
	}{
		{"a var", "{{ svcs }}", true},
		{"a label", "{{ labels.svcs }}", true},
		{"an included label", "{{ service }}", true},
		{"an included summary", "{{ summary }}", true},
		{"a step's list", "{{ steps.a.items | tojson }}", false},
		{"metadata", "{{ items }}", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			imp := newImporter(parseConfig("config.yaml", nil), Options{})
			src := "name: p\nvars: {svcs: \"['a', 'b']\"}\ncontext_template: {include: [labels.service, summary, metadata.items]}\nsteps:\n  - {name: a, executor: human}\n  - fan_out: {name: f, over: \"" + c.over + "\", executor: human}\n"
			out, notes := imp.convertFile("p.yaml", []byte(src), false)
			person := false
			for _, n := range notes {
				person = person || n.Level == Person && n.Kind == "over"
			}
			if person != c.person {
				t.Errorf("needs a person %v, want %v: %v\n%s", person, c.person, notes, out)
			}
		})
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImportLimits checks each bound below, at and above it.
func TestImportLimits(t *testing.T) {
	pipe := "name: p\nsteps: []\n"
	n := len(pipe)
	tests := []struct {
		name  string
		files map[string]string
		lim   Limits
		err   string
	}{
		{"config at its bound", map[string]string{"config.yaml": "a: 1234\n", "pipelines/a.yaml": pipe}, Limits{ConfigBytes: 8}, ""},
		{"config over its bound", map[string]string{"config.yaml": "a: 12345\n"}, Limits{ConfigBytes: 8}, "larger than 8 bytes"},
		{"file below its bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe}, Limits{FileBytes: n + 1}, ""},
		{"file at its bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe}, Limits{FileBytes: n}, ""},
		{"file over its bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe}, Limits{FileBytes: n - 1}, fmt.Sprintf("larger than %d bytes", n-1)},
		{"files at their bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe, "steps/s.yaml": "name: s\n"}, Limits{Files: 2}, ""},
		{"files over their bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe, "pipelines/b.yaml": pipe, "steps/s.yaml": "name: s\n"}, Limits{Files: 2}, "more than 2"},
		{"one directory over the bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe, "pipelines/b.yaml": pipe, "pipelines/c.yaml": pipe}, Limits{Files: 2}, "more than 2"},
		{"total at its bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe, "pipelines/b.yaml": pipe}, Limits{TotalBytes: 2 * n}, ""},
		{"total over its bound", map[string]string{"config.yaml": "{}", "pipelines/a.yaml": pipe, "pipelines/b.yaml": pipe}, Limits{TotalBytes: 2*n - 1}, fmt.Sprintf("larger than %d bytes together", 2*n-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			writeTree(t, src, tt.files)
			_, err := Import(src, t.TempDir(), Options{Limits: tt.lim})
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("got %v, want an error with %q", err, tt.err)
			}
		})
	}
}

// TestExprDepth: expressions nest up to MaxExprDepth.
func TestExprDepth(t *testing.T) {
	for _, tt := range []struct {
		depth  int
		person bool
	}{{MaxExprDepth - 2, false}, {MaxExprDepth - 1, false}, {MaxExprDepth, true}} {
		src := "{{ " + strings.Repeat("(", tt.depth) + "x" + strings.Repeat(")", tt.depth) + " }}"
		out, notes := convertTemplate(src, &scope{})
		got := len(notes) > 0 && notes[0].level == Person
		if got != tt.person {
			t.Errorf("depth %d: needs a person %v, want %v (%q)", tt.depth, got, tt.person, out)
		}
	}
}

// TestWebhookBody: a webhook step's JSON body with its templates inside
// strings becomes a payload; any other body stays the prompt_template.
func TestWebhookBody(t *testing.T) {
	step := func(cfg, body string) string {
		return "name: p\nsteps:\n  - name: w\n    executor: webhook\n    executor_config: {url: https://x.example.com" + cfg + "}\n    prompt_template: '" + body + "'\n"
	}
	tests := []struct {
		name, src, want string
	}{
		{"object", step("", `{"a": "{{ x }}", "n": 3, "ok": true, "l": [1, "{{ y }}"], "o": {"z": null}}`),
			"executor_config:\n      url: https://x.example.com\n      payload:\n        a: \"{{ x }}\"\n        n: 3\n        ok: true\n        l:\n          - 1\n          - \"{{ y }}\"\n        o:\n          z: null\n"},
		{"value outside quotes", step("", `{"a": {{ x | tojson }}}`), "prompt_template: '{\"a\": {{ x | json }}}'"},
		{"GET", step(", method: GET", `{"a": "{{ x }}"}`), "prompt_template: '{\"a\": \"{{ x }}\"}'"},
		{"form", step(", content_type: application/x-www-form-urlencoded", `{"a": "{{ x }}"}`), "prompt_template: '{\"a\": \"{{ x }}\"}'"},
		{"not an object", step("", `["{{ x }}"]`), "prompt_template: '[\"{{ x }}\"]'"},
		{"tag inside", step("", `{"a": "{% if x %}y{% endif %}"}`), "prompt_template: '{\"a\": \"{% if x %}y{% endif %}\"}'"},
		// The reference sent its body as rendered, never secret-expanded;
		// a payload's values are, so each $ is written $$.
		{"dollar", step("", `{"a": "cost ${PRICE} or $5", "b": ["$$"]}`), "payload:\n        a: \"cost $${PRICE} or $$5\"\n        b:\n          - \"$$$$\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imp := newImporter(parseConfig("config.yaml", nil), Options{})
			out, _ := imp.convertFile("p.yaml", []byte(tt.src), false)
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output lacks\n%s\n---\n%s", tt.want, out)
			}
		})
	}
}

// TestWebhookBodyText: the payload a webhook body becomes, once its
// secret references are resolved as the webhook executor resolves them,
// is the text the reference sent, also where that text looks like a
// reference to a secret that is set.
func TestWebhookBodyText(t *testing.T) {
	const body = `{"text": "costs ${PRICE}, $5, $$ and ${ not a ref"}`
	src := "name: p\nsteps:\n  - name: w\n    executor: webhook\n    executor_config: {url: https://x.example.com}\n    prompt_template: '" + body + "'\n"
	imp := newImporter(parseConfig("config.yaml", nil), Options{})
	out, _ := imp.convertFile("p.yaml", []byte(src), false)
	var conv struct {
		Steps []struct {
			ExecutorConfig struct {
				Payload map[string]string `yaml:"payload"`
			} `yaml:"executor_config"`
		} `yaml:"steps"`
	}
	if err := yaml.Unmarshal(out, &conv); err != nil || len(conv.Steps) != 1 {
		t.Fatalf("converted file: %v\n%s", err, out)
	}
	env := secret.Env(func(name string) string { return map[string]string{"PRICE": "s3cret"}[name] })
	got, err := secret.Expand(context.Background(), env, conv.Steps[0].ExecutorConfig.Payload["text"])
	if want := "costs ${PRICE}, $5, $$ and ${ not a ref"; err != nil || got != want {
		t.Errorf("payload text resolves to %q (%v), want %q\n%s", got, err, want, out)
	}
}

// TestStaleFiles: a file of an earlier import that the source no longer
// produces is removed when unchanged, kept when edited, and a manifest
// naming a path outside DEST's own files removes nothing.
func TestStaleFiles(t *testing.T) {
	src, dest := t.TempDir(), t.TempDir()
	writeTree(t, src, map[string]string{"config.yaml": "{}\n", "pipelines/a.yaml": "name: a\nsteps: []\n", "pipelines/b.yaml": "name: b\nsteps: []\n", "pipelines/c.yaml": "name: c\nsteps: []\n"})
	if _, err := Import(src, dest, Options{}); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "victim.yaml")
	writeTree(t, filepath.Dir(outside), map[string]string{"victim.yaml": "x"})
	rel, err := filepath.Rel(dest, outside)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(dest, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(manifest), `"files": {`, `"files": {"`+filepath.ToSlash(rel)+`": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",`, 1)
	writeTree(t, dest, map[string]string{ManifestName: forged, "pipelines/c.yaml": "edited\n"})
	if err := os.Remove(filepath.Join(src, "pipelines", "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(src, "pipelines", "c.yaml")); err != nil {
		t.Fatal(err)
	}
	res, err := Import(src, dest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, f := range res.Files {
		if f.Action == "removed" {
			removed = append(removed, f.Path)
		}
	}
	if len(removed) != 1 || removed[0] != "pipelines/b.yaml" {
		t.Errorf("removed %v, want [pipelines/b.yaml]", removed)
	}
	if _, err := os.Stat(filepath.Join(dest, "pipelines", "c.yaml")); err != nil {
		t.Error("the edited stale file was removed")
	}
	if _, err := os.Stat(outside); err != nil {
		t.Error("a file outside DEST was removed")
	}
}

// TestLibraryInBranches: a library step with fields a branch does not
// take is written into the branch (the reference ignored them there); a
// fan_out's use: is dropped (the reference never applied it).
func TestLibraryInBranches(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"config.yaml":       "{}\n",
		"steps/review.yaml": "name: review\ndescription: d\ntags: [x]\nexecutor: gateway\nexecutor_config: {agent: reviewer, model: m1}\nprompt_template: \"Review {{ summary }}\"\nconfidence_threshold: 0.7\nretry: {attempts: 2}\n",
		"steps/plain.yaml":  "name: plain\nexecutor: gateway\nexecutor_config: {agent: plain}\n",
		"pipelines/p.yaml":  "name: p\nsteps:\n  - parallel:\n      name: g\n      steps:\n        - use: review\n          name: r1\n          executor_config: {model: m2}\n        - use: plain\n          name: r2\n  - fan_out:\n      name: f\n      use: plain\n      over: '[1]'\n      executor: gateway\n      executor_config: {agent: x}\n",
	})
	dest := t.TempDir()
	res, err := Import(src, dest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dest)[filepath.Join("pipelines", "p.yaml")]
	for _, want := range []string{
		"        - name: r1\n          executor: gateway\n          executor_config: {agent: reviewer, model: m2}\n          prompt_template: \"Review {{ summary }}\"\n",
		"        - use: plain\n          name: r2\n",
		"      name: f\n      # stepline import: dropped use: the reference does not apply use: in a fan_out\n      over: '[1]'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("p.yaml lacks\n%s\n---\n%s", want, got)
		}
	}
	if strings.Contains(got, "retry:") || strings.Contains(got, "confidence_threshold:") || strings.Count(got, "use: plain") != 1 {
		t.Errorf("a field the target does not take survived:\n%s", got)
	}
	for _, n := range res.Notes {
		if n.Level == Person {
			t.Errorf("needs a person: %s", n)
		}
	}
}
