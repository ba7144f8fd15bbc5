package task

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// compiledPayload is a step Task's payload as a compiled machine sends it
// (taken from a run's TaskScheduled event), with every field the fast
// path decodes by hand.
const compiledPayload = `{"attempt":2,"mode":"step","pipeline":{"config":"f7964594e36a","name":"bench","run_ended_error":true,"stage":"testing","vars":{"team":"sre"}},` +
	`"run":{"execution":"arn:aws:states:local:000000000000:execution:bench:run-1","id":"run-1","parent_run_id":"","started_at":"2026-12-03T08:17:35.459Z"},` +
	`"step":{"confidence_threshold":0.75,"executor":"scripted","name":"s2","prompt_template":"{{ steps.s1.summary }}"},` +
	`"steps":{"s1":{"confidence":0.9,"summary":"done \"quoted\" \u00e9"},"s0":[1,{"a":"}"}]},"trigger":{"alert":"disk full","n":3},` +
	`"usage":{"cost_usd":0.0125,"input_tokens":120,"output_tokens":-7},"group":"g","task_token":"tok","item":"x","index":3,"total":7,` +
	`"child":{"ok":true},"final":[null],"branches":[{"status":"completed"}],"error":{"Error":"E","Cause":"c"},` +
	`"decision":{"approved":true},"check":{"index":1,"name":"c","attempt":2}}`

// stepPayload is a plain step's payload as BenchmarkRun's machines send
// it.
const stepPayload = `{"attempt":1,"mode":"step","pipeline":{"config":"f7964594e36a","name":"bench","run_ended_error":true,"stage":"testing"},` +
	`"run":{"execution":"arn:aws:states:local:000000000000:execution:bench:run-01a23afaf6d518e1f9b91bc2","id":"run-01a23afaf6d518e1f9b91bc2","parent_run_id":"","started_at":"2026-12-03T08:17:35.459Z"},` +
	`"step":{"confidence_threshold":0.75,"executor":"scripted","name":"s50","on_abort":"notify","on_failure":{"policy":"abort"},"on_low_confidence":"escalate","prompt_template":"{{ steps.s49.summary }}"},` +
	`"steps":{"s49":{"confidence":0.9,"model":"fixed","next_step_context":"go on","proceed":true,"provider":"bench","summary":"done"}},"trigger":{},"usage":{"cost_usd":0,"input_tokens":0,"output_tokens":0}}`

// sameAsUnmarshal decodes b with DecodeRequest and json.Unmarshal and
// fails unless both give the same Request and the same error.
// A valid b is decoded by DecodeEncoded too, with the same result.
func sameAsUnmarshal(t *testing.T, b []byte) {
	t.Helper()
	var want Request
	werr := json.Unmarshal(b, &want)
	decoders := map[string]func([]byte) (Request, error){"DecodeRequest": DecodeRequest}
	if json.Valid(b) {
		decoders["DecodeEncoded"] = DecodeEncoded
	}
	for name, decode := range decoders {
		got, gerr := decode(b)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%s of %s:\nerror %v, json.Unmarshal's %v", name, b, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s of %s:\ngot  %+v\nwant %+v", name, b, got, want)
		}
	}
}

// TestDecodeRequestFastPath checks that the payloads compiled machines
// send take the hand-written path, and that it decodes them as
// json.Unmarshal does.
func TestDecodeRequestFastPath(t *testing.T) {
	for _, p := range []string{compiledPayload, stepPayload, `{"pipeline":{"workflow":"express","run_ended_error":false,"include":["a.b"],"budget":{},"notifications":[]}}`, `{"mode":"step","steps":{}}`, ` { } `, `{"usage":{"cost_usd":1e-3,"input_tokens":0,"output_tokens":9223372036854775807}}`} {
		var r Request
		d := decoder{b: []byte(p)}
		if !d.request(&r) {
			t.Errorf("%s: not decoded by hand", p)
		}
		sameAsUnmarshal(t, []byte(p))
	}
}

// TestDecodeRequestLeftToUnmarshal checks the inputs the hand-written
// path leaves to json.Unmarshal: it must refuse each (or the result would
// differ), and the result must be json.Unmarshal's.
func TestDecodeRequestLeftToUnmarshal(t *testing.T) {
	for _, p := range []string{
		`{"Mode":"step"}`,                  // another spelling: matched case-insensitively
		`{"mode":"step","mode":"join"}`,    // repeated key
		`{"mode":"step","extra":1}`,        // unknown key
		`{"step":null}`,                    // null into a raw value
		`{"run":null}`,                     // null into a struct
		`{"mode":"st\u0065p"}`,             // escaped string
		`{"mode":"é"}`,                     // non-ASCII string
		`{"mode":"st` + "\xff" + `ep"}`,    // invalid UTF-8, replaced by json.Unmarshal
		`{"attempt":1.0}`,                  // fraction into an int
		`{"attempt":1e2}`,                  // exponent into an int
		`{"attempt":99999999999999999999}`, // out of range
		`{"usage":{"cost_usd":1e400}}`,     // float out of range
		`{"usage":{"cost_usd":"1"}}`,       // string into a float
		`{"usage":{"input_tokens":1,"input_tokens":2}}`,
		`{"run":{"id":"a","ID":"b"}}`,                                  // case-insensitive repeat
		`{"run":{"id":"a","other":"b"}}`,                               // unknown key in run
		`{"steps":{"a":1,"a":2}}`,                                      // repeated step
		`{"steps":{"\u0061":1}}`,                                       // escaped step name
		`{"steps":{"a":null}}`,                                         // null output
		`{"pipeline":{"name":3}}`,                                      // type error inside a reflected field
		`{"mode":3}`,                                                   // type error
		`[]`, `"x"`, `null`, `{"mode":"step"`, `{"mode":"step"} x`, ``, // not an object / not JSON
	} {
		var r Request
		d := decoder{b: []byte(p)}
		if json.Valid([]byte(p)) && d.request(&r) {
			t.Errorf("%s: decoded by hand, want it left to json.Unmarshal", p)
		}
		sameAsUnmarshal(t, []byte(p))
	}
}

// FuzzDecodeRequest checks DecodeRequest against json.Unmarshal on any
// input (go test runs the seeds; go test -fuzz explores).
func FuzzDecodeRequest(f *testing.F) {
	f.Add(compiledPayload)
	f.Add(stepPayload)
	f.Add(strings.ReplaceAll(compiledPayload, ",", " , "))
	f.Add(`{"steps":{"a":{"b":[1,"]}"]},"c":"\\"}}`)
	f.Add(`{"mode":"step","usage":{"input_tokens":-0,"output_tokens":1,"cost_usd":-0.0}}`)
	f.Fuzz(func(t *testing.T, p string) {
		sameAsUnmarshal(t, []byte(p))
	})
}

// BenchmarkDecodeRequest compares DecodeRequest with json.Unmarshal on
// a compiled machine's payload.
func BenchmarkDecodeRequest(b *testing.B) {
	for _, p := range []struct{ name, p string }{{"step", stepPayload}, {"every-field", compiledPayload}} {
		b.Run(p.name, func(b *testing.B) { benchDecode(b, []byte(p.p)) })
	}
}

func benchDecode(b *testing.B, p []byte) {
	b.Run("DecodeRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRequest(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Request
			if err := json.Unmarshal(p, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecoding checks the Lambda adapter: a payload reaches the handler
// decoded as DecodeRequest decodes it, and one that does not decode is
// the adapter's error with the handler not called.
func TestDecoding(t *testing.T) {
	calls := 0
	h := Decoding(func(_ context.Context, r Request) (string, error) {
		calls++
		return r.Mode + "/" + r.Run.ID, nil
	})
	out, err := h(context.Background(), json.RawMessage(stepPayload))
	if err != nil || out != "step/run-01a23afaf6d518e1f9b91bc2" || calls != 1 {
		t.Fatalf("got %q, %v after %d calls", out, err, calls)
	}
	out, err = h(context.Background(), json.RawMessage(`{"mode": 3}`))
	var want Request
	werr := json.Unmarshal([]byte(`{"mode": 3}`), &want)
	if err == nil || err.Error() != werr.Error() || out != "" || calls != 1 {
		t.Errorf("a payload that does not decode: %q, %v (json.Unmarshal: %v) after %d calls, want its error and no call", out, err, werr, calls)
	}
}
