package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// Fresh makes a new, empty store for one test and returns a function that
// opens a handle on it. Each call opens another handle on the same store,
// as another process would; every handle is closed when the test ends.
type Fresh func(tb testing.TB) (open func() engine.StoreFile)

// test is one conformance test.
type test struct {
	name string
	fn   func(t *testing.T, open func() engine.StoreFile)
}

// tests are the conformance tests, in the order Run runs them.
var tests = []test{
	{"RoundTrip", testRoundTrip},
	{"PutSetsTimes", testPutSetsTimes},
	{"NotFound", testNotFound},
	{"Exists", testExists},
	{"RunNamePerWorkspace", testRunNamePerWorkspace},
	{"UpdateRun", testUpdateRun},
	{"Runs", testRuns},
	{"Lists", testLists},
	{"DeleteWorkspace", testDeleteWorkspace},
	{"DeleteOne", testDeleteOne},
	{"Events", testEvents},
	{"EventSeqNotReused", testEventSeqNotReused},
	{"EventBadDetail", testEventBadDetail},
	{"Rollback", testRollback},
	{"ViewReadOnly", testViewReadOnly},
	{"ViewSnapshot", testViewSnapshot},
	{"ConcurrentWriters", testConcurrentWriters},
	{"EventsInCommitOrder", testEventsInCommitOrder},
	{"ForkRequestKey", testForkRequestKey},
	{"SetCapability", testSetCapability},
	{"SetCapabilitySetsFields", testSetCapabilitySetsFields},
	{"CapabilityErrors", testCapabilityErrors},
	{"SeeNonce", testSeeNonce},
	{"SeeNoncePrunes", testSeeNoncePrunes},
	{"CapabilityCascades", testCapabilityCascades},
	{"ApprovalRoundTrip", testApprovalRoundTrip},
	{"UpdateApproval", testUpdateApproval},
	{"ApprovalErrors", testApprovalErrors},
	{"Approvals", testApprovals},
	{"ApprovalsGoWithWorkspace", testApprovalsGoWithWorkspace},
}

// Run runs the conformance suite against the stores fresh makes, each test
// on a store of its own.
func Run(t *testing.T, fresh Fresh) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, fresh(t)) })
	}
	t.Run("ID", func(t *testing.T) { testID(t, fresh) })
}

// Update runs fn in an Update and fails tb on error.
func Update(tb testing.TB, s tine.Store, fn func(tine.Tx) error) {
	tb.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		tb.Fatalf("Update: %v", err)
	}
}

// View runs fn in a View and fails tb on error.
func View(tb testing.TB, s tine.Store, fn func(tine.Tx) error) {
	tb.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		tb.Fatalf("View: %v", err)
	}
}

// At returns a fixed time with a nanosecond part, in a zone other than UTC,
// to check that times come back equal and in UTC.
func At(sec int) time.Time {
	return time.Date(2025, 3, 1, 12, 0, sec, 123456789, time.FixedZone("X", 3600))
}

// TestWorkspace returns a workspace with every field set, called id.
func TestWorkspace(id string) *tine.Workspace {
	return &tine.Workspace{ID: id, Name: "name-" + id, Path: "/src/" + id, Backend: "overlay", UID: 1001, GID: 1001, Groups: []int{27, 1003}, CreatedAt: At(0)}
}

// TestRun returns a run of workspace ws with every field set, called id
// and named name.
func TestRun(id, ws, name string) *tine.Run {
	return &tine.Run{
		ID: id, Workspace: ws, Name: name, Parent: "rparent", Role: tine.RoleFork,
		State: tine.StateActive, Base: "vbase", Origin: "vorigin", Group: "g1", Approach: "tabs",
		GitHead: "abc123", Resolution: tine.ResolutionMerged, CreatedAt: At(1), UpdatedAt: At(2),
	}
}

func testVersion(id string, layers ...string) *tine.Version {
	if layers == nil {
		layers = []string{}
	}
	return &tine.Version{ID: id, Workspace: "w1", Parent: "v0", Run: "r1", Kind: tine.VersionFork,
		Label: "before refactor", Layers: layers, CreatedAt: At(3)}
}

func testLayer(id string) *tine.Layer {
	return &tine.Layer{ID: id, Workspace: "w1", Bytes: 1 << 40, CreatedAt: At(4)}
}

func testGroup(id string) *tine.Group {
	return &tine.Group{ID: id, Workspace: "w1", Parent: "r1", Version: "v1", CreatedAt: At(5)}
}

// Seed puts workspaces w1 and w2 into s.
func Seed(tb testing.TB, s tine.Store) {
	tb.Helper()
	Update(tb, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutWorkspace(TestWorkspace("w1")), tx.PutWorkspace(TestWorkspace("w2")))
	})
}

// seedRuns puts workspaces w1 and w2 and runs r1 and r2 of w1 into s.
func seedRuns(tb testing.TB, s tine.Store) {
	tb.Helper()
	Seed(tb, s)
	Update(tb, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutRun(TestRun("r1", "w1", "a")), tx.PutRun(TestRun("r2", "w1", "b")))
	})
}

// ids maps records to their ids.
func ids[T any](xs []*T, id func(*T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

// stateOther is a third state, so that filters on state are tested on more
// than two values; the store does not interpret states.
const stateOther tine.State = "other"
