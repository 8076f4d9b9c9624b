package approval

import (
	"testing"
	"time"

	"github.com/tinehq/tine"
)

func TestFingerprint(t *testing.T) {
	base := func() *tine.Run {
		return &tine.Run{ID: "r1", Workspace: "w1", Name: "fix", Parent: "r0", Role: tine.RoleFork,
			State: tine.StateActive, Base: "v1", Proc: tine.ProcRunning}
	}
	want := Fingerprint(base(), "ready")
	tests := []struct {
		name      string
		change    func(r *tine.Run)
		readiness string
		same      bool
	}{
		{"Unchanged", func(*tine.Run) {}, "ready", true},
		{"ProcessStopped", func(r *tine.Run) { r.Proc = tine.ProcStopped }, "ready", true},
		{"Renamed", func(r *tine.Run) { r.Name = "other" }, "ready", true},
		{"Touched", func(r *tine.Run) { r.UpdatedAt = time.Now() }, "ready", true},
		{"Readiness", func(*tine.Run) {}, "failing", false},
		{"State", func(r *tine.Run) { r.State = tine.StateDiscarded }, "ready", false},
		{"Resolution", func(r *tine.Run) { r.Resolution = tine.ResolutionMerged }, "ready", false},
		{"Base", func(r *tine.Run) { r.Base = "v2" }, "ready", false},
		{"Role", func(r *tine.Run) { r.Role = tine.RoleSource }, "ready", false},
		{"Parent", func(r *tine.Run) { r.Parent = "r9" }, "ready", false},
		{"OtherRun", func(r *tine.Run) { r.ID = "r2" }, "ready", false},
		{"FieldsRunTogether", func(r *tine.Run) { r.Base = "v1r" }, "eady", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base()
			tt.change(r)
			if got := Fingerprint(r, tt.readiness); (got == want) != tt.same {
				t.Errorf("Fingerprint = %s, base %s; want same %v", got, want, tt.same)
			}
		})
	}
}

func TestGroupFingerprint(t *testing.T) {
	a := &tine.Run{ID: "a", State: tine.StateActive}
	b := &tine.Run{ID: "b", State: tine.StateActive}
	ready := func(*tine.Run) string { return "ready" }
	want := GroupFingerprint([]*tine.Run{a, b}, ready)
	c := *b
	c.State = tine.StateDiscarded
	tests := []struct {
		name string
		runs []*tine.Run
		same bool
	}{
		{"Reordered", []*tine.Run{b, a}, true},
		{"MemberChanged", []*tine.Run{a, &c}, false},
		{"MemberLeft", []*tine.Run{a}, false},
		{"MemberJoined", []*tine.Run{a, b, {ID: "d"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GroupFingerprint(tt.runs, ready); (got == want) != tt.same {
				t.Errorf("GroupFingerprint = %s, base %s; want same %v", got, want, tt.same)
			}
		})
	}
}
