package livefork

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefusedError_ListsReasons(t *testing.T) {
	e := &RefusedError{Pid: 42, Reasons: []string{"3 threads", "connected socket on fd 5"}}
	want := "process 42 cannot be live-forked: 3 threads; connected socket on fd 5"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
}

func TestTarget_Validate(t *testing.T) {
	for _, tc := range []struct {
		t  Target
		ok bool
	}{
		{Target{MountNS: "/proc/1/ns/mnt", Workspace: "/w"}, true},
		{Target{Workspace: "/w"}, false},
		{Target{MountNS: "/proc/1/ns/mnt", Workspace: "w"}, false},
	} {
		if err := tc.t.validate(); (err == nil) != tc.ok {
			t.Errorf("validate(%+v) = %v", tc.t, err)
		}
	}
}

func TestCRIUReason(t *testing.T) {
	out := "\nWarn  (criu/kerndat.c:1103): CRIU was built without libnftables support\n" +
		"Error (criu/vdso.c:627): vdso: Unexpected vvar_vclock size\nLooks bad\n"
	if got := criuReason(out, errors.New("exit status 1")); !strings.Contains(got, "vvar_vclock") {
		t.Errorf("reason = %q", got)
	}
	if got := criuReason("  \n", errors.New("exit status 1")); got != "criu check: exit status 1" {
		t.Errorf("empty output: reason = %q", got)
	}
}

// TestCRIUProbe probes the host's criu: it is expected to be missing or to
// fail (CRIU 3.17 on kernel 6.18), with a reason.
func TestCRIUProbe(t *testing.T) {
	err := CRIUProbe(context.Background())
	if err == nil {
		t.Skip("criu check passes on this host")
	}
	if !errors.Is(err, ErrCRIUUnavailable) || strings.TrimSpace(strings.TrimPrefix(err.Error(), ErrCRIUUnavailable.Error()+":")) == "" {
		t.Fatalf("CRIUProbe error carries no reason: %v", err)
	}
	t.Logf("CRIUProbe: %v", err)
}

// TestCRIUProbe_Fake puts a fake criu first in PATH.
func TestCRIUProbe_Fake(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	for _, tc := range []struct{ name, script, want string }{
		{"missing", "", "criu is not installed"},
		{"fails", "echo 'Error (criu/vdso.c:1): vvar_vclock mismatch' >&2; exit 1", "vvar_vclock mismatch"},
		{"passes", "echo Looks good.; exit 0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.script != "" {
				body := "#!/bin/sh\n" + tc.script + "\n"
				if err := os.WriteFile(filepath.Join(dir, "criu"), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", dir)
			err := CRIUProbe(context.Background())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CRIUProbe = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrCRIUUnavailable) {
				t.Fatalf("CRIUProbe = %v, want reason %q", err, tc.want)
			}
		})
	}
}

func TestCRIUReason_Debian12OnNewKernel(t *testing.T) {
	out := `Error (criu/util.c:642): exited, status=1
Error (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds
Error (criu/vdso.c:613): vdso: Failed to fill self vdso symtable
Error (criu/crtools.c:260): Could not initialize kernel features detection.
`
	want := "vdso: Unexpected rt vDSO area bounds (Could not initialize kernel features detection)"
	if got := criuReason(out, errors.New("exit status 1")); got != want {
		t.Errorf("criuReason = %q, want %q", got, want)
	}
}
