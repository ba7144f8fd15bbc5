// Package storetest is the conformance suite every store.Store passes. A
// backend's tests call Run (and RunCheckpoints for a store.Checkpointer)
// with a constructor that returns a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openTestStore(t) })
//	}
//
// The suite checks every method and every error contract of the interface,
// including the concurrency guarantees (one winner among concurrent dedup
// claimers, run claimers and approval deciders, exact usage totals under
// concurrent AddUsage). Stores that are eventually consistent on list reads must make
// their test instances read their own writes.
package storetest
