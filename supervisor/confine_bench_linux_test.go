package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/confine"
)

// BenchmarkExec measures one short command (true) through a supervisor,
// unconfined and confined as a fork is (Landlock, seccomp): the price of
// the tine-confine wrapper's extra exec and its rules.
//
//	go test ./supervisor -run '^$' -bench Exec -benchtime 200x
func BenchmarkExec(b *testing.B) {
	for _, bc := range []struct {
		name string
		spec *confine.Spec
	}{
		{"plain", nil},
		{"confined", &confine.Spec{Seccomp: true, DenyMounts: true, Writable: []string{"/tmp", "/dev"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if os.Geteuid() != 0 {
				b.Skip("requires root: supervisors create namespaces")
			}
			root := b.TempDir()
			spec := Spec{Run: "rbench", Hostname: "bench", Dir: filepath.Join(root, "sup"), LogDir: filepath.Join(root, "logs"),
				Workspace: root, Env: os.Environ(), Confine: bc.spec}
			pid, err := Launch(context.Background(), spec, func(int) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			c := NewClient(spec.Dir)
			defer func() { c.Stop(context.Background(), time.Second); syscall.Kill(pid, syscall.SIGKILL) }()
			null, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			defer null.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				code, err := c.Exec(context.Background(), Exec{Args: []string{"/bin/true"}, Env: os.Environ(), Dir: root},
					[3]*os.File{null, null, null}, nil, nil)
				if err != nil || code != 0 {
					b.Fatalf("exec: %d %v", code, err)
				}
			}
		})
	}
}
