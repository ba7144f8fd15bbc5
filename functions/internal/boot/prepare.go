package boot

import "encoding/json"

// Prepare builds encoding/json's codecs for a handler's event and answer
// types, which the function's first invocation would otherwise build
// before it could start: decoding into a struct type builds the codecs of
// every type it reaches (for the step function's task.Request about a
// third of a millisecond on a cold process).
//
// Start it in a goroutine first thing in main (go boot.Prepare[In, Out]()):
// the codecs are then built while the start waits on the network (a
// secret, the pipeline bundles) or on the runtime API, or on another
// core, rather than within the first invocation. encoding/json's cache is
// safe for concurrent use: an invocation that arrives before Prepare is
// done builds what it still needs itself, as it would without it.
func Prepare[In, Out any]() {
	// A type that refuses {} has built its codecs all the same.
	_ = json.Unmarshal([]byte(`{}`), new(In))
	var out Out
	_, _ = json.Marshal(out)
}
