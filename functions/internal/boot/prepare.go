package boot

import "encoding/json"

// Prepare builds encoding/json's codecs for a handler's event and answer
// types, which the function's first invocation would otherwise build
// before it could start: decoding into a struct type builds the codecs of
// every type it reaches (for task.Request about a third of a millisecond
// on a cold process).
//
// A function whose start waits on the network (a secret, the pipeline
// bundles) starts it in a goroutine first thing in main (go
// boot.Prepare[In, Out]()): the codecs are then built while the start
// waits, even on one CPU, rather than within the first invocation. A
// start that does not wait gains nothing from it on one CPU (the work
// only moves, and competes with the rest of the start), so the step
// function does not call it. encoding/json's cache is safe for concurrent
// use: an invocation that arrives before Prepare is done builds what it
// still needs itself, as it would without it.
func Prepare[In, Out any]() {
	// A type that refuses {} has built its codecs all the same.
	_ = json.Unmarshal([]byte(`{}`), new(In))
	var out Out
	_, _ = json.Marshal(out)
}
