package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestImage_Builds: deploy/Dockerfile, the image the manifests run, builds
// with buildah (as docker build would) from a clean tree, and the image
// holds what a node calls: tine and tine-controller stamped with the
// commit, git, iproute2, nftables, CRIU 4 and the pinned agents' CLIs;
// its entry point is tine. The base images it names come from registries
// CI cannot reach, so stand-ins are made from what it can: debian:12-slim
// from Debian's archive (debootstrap, minbase), golang:1.26-bookworm the
// same with this machine's Go. This machine's certificate authorities go
// and apt settings go into the stand-ins, as a company's own do into its
// base images, for the module proxy and npm registry behind an egress
// proxy and a Debian mirror frozen in time.
func TestImage_Builds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root: buildah and debootstrap (.ci/run installs them)")
	}
	for _, tool := range []string{"buildah", "debootstrap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("requires %s (.ci/run installs it from Debian)", tool)
		}
	}
	if os.Getenv("TINE_TEST_IMAGE") != "1" {
		// Nine minutes of two cores: beside the other packages' tests it
		// would slow those that time things.
		t.Skip("builds the image (minutes, and the network): .ci/run runs it on its own, with TINE_TEST_IMAGE=1")
	}
	b := newBuilder(t)
	rootfs := filepath.Join(b.dir, "rootfs")
	b.run("debootstrap", "--variant=minbase", "bookworm", rootfs)
	b.standIn("docker.io/library/debian:12-slim", "", rootfs, nil, "")
	// golang's image has git (its VCS stamp, and scripts/ldflags.sh's).
	b.standIn("docker.io/library/golang:1.26-bookworm", "docker.io/library/debian:12-slim", "/usr/local/go",
		[]string{"PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "GOPATH=/go", "GOTOOLCHAIN=local"},
		"apt-get update -qq && apt-get install -y -qq --no-install-recommends git ca-certificates >/dev/null && rm -rf /var/lib/apt/lists/*")

	src := filepath.Join(b.dir, "src")
	b.run("git", "clone", "-q", "..", src) // a clean tree: the committed files only
	if head := strings.TrimSpace(b.run("git", "-C", "..", "rev-parse", "HEAD")); head != strings.TrimSpace(b.run("git", "-C", src, "rev-parse", "HEAD")) {
		t.Fatal("the clone is not at this tree's HEAD")
	}
	b.buildah("bud", "--pull=never", "--network", "host", "--isolation", "chroot", "--layers=false",
		"-f", filepath.Join(src, "deploy/Dockerfile"), "-t", "localhost/tine:test", src)

	var img struct {
		OCIv1 struct {
			Config struct{ Entrypoint []string } `json:"config"`
		}
	}
	if err := json.Unmarshal([]byte(b.buildah("inspect", "--type", "image", "localhost/tine:test")), &img); err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if got := strings.Join(img.OCIv1.Config.Entrypoint, " "); got != "/usr/local/bin/tine" {
		t.Errorf("entry point %q, want /usr/local/bin/tine", got)
	}
	ctr := strings.TrimSpace(b.buildah("from", "--pull=never", "localhost/tine:test"))
	commit := strings.TrimSpace(b.run("git", "-C", src, "rev-parse", "--short=12", "HEAD"))
	for _, c := range []struct{ cmd, want string }{
		{"tine version", commit},
		{"tine-controller --version", commit},
		{"git --version", "git version 2."},
		{"ip -V", "iproute2"},
		{"nft --version", "nftables"},
		{"criu --version", "Version: 4."},
		{"claude --version", "2.1.332"},
		{"codex --version", "0.171.0"},
	} {
		out := b.buildah("run", "--isolation", "chroot", ctr, "--", "sh", "-c", c.cmd+" 2>&1")
		if !strings.Contains(out, c.want) {
			t.Errorf("in the image, %s: %q; want %q in it", c.cmd, out, c.want)
		}
	}
	// The manifests run this image as "tine"; kustomize's images: entry
	// renames it to where a team pushes what it built.
	k, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kust struct{ Images []struct{ Name string } }
	if err := yaml.Unmarshal(k, &kust); err != nil || len(kust.Images) != 1 || kust.Images[0].Name != "tine" {
		t.Errorf("kustomization.yaml's images: %+v, %v; want the one entry renaming tine", kust.Images, err)
	}
}

// builder runs buildah on a storage of its own, removed at the end.
type builder struct {
	t    *testing.T
	dir  string
	root []string // buildah's storage flags
}

func newBuilder(t *testing.T) *builder {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "tine-image-test-") // large: not a tmpfs /tmp
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{t: t, dir: dir, root: []string{"--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "overlay"}}
	t.Cleanup(func() {
		exec.Command("buildah", append(b.root, "rm", "--all")...).Run()
		exec.Command("buildah", append(b.root, "rmi", "--all", "--force")...).Run()
		exec.Command("umount", "-R", filepath.Join(dir, "storage", "overlay")).Run()
		os.RemoveAll(dir)
	})
	return b
}

// run runs a command and returns its standard output; it fails the test
// with its output when it fails.
func (b *builder) run(name string, args ...string) string {
	b.t.Helper()
	start := time.Now()
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tail := errb.String() + out.String()
		if len(tail) > 4000 {
			tail = "…" + tail[len(tail)-4000:]
		}
		b.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail)
	}
	if d := time.Since(start); d > 10*time.Second {
		line := strings.Join(append([]string{name}, args...), " ")
		if len(line) > 160 {
			line = line[:160] + "…"
		}
		b.t.Logf("%v: %s", d.Round(time.Second), line)
	}
	return out.String()
}

func (b *builder) buildah(args ...string) string {
	b.t.Helper()
	return b.run("buildah", append(append([]string{}, b.root...), args...)...)
}

// standIn commits image name: base (scratch when "") with dir copied in at
// its own path (rootfs: at /), this machine's certificate authorities and
// apt settings (a mirror whose Release files' dates it must not check),
// env, and what script then did in it.
func (b *builder) standIn(name, base, dir string, env []string, script string) {
	b.t.Helper()
	from := base
	if from == "" {
		from = "scratch"
	}
	ctr := strings.TrimSpace(b.buildah("from", "--pull=never", from))
	mnt := strings.TrimSpace(b.buildah("mount", ctr))
	dst := filepath.Join(mnt, dir)
	if base == "" {
		dst = mnt
	}
	b.run("mkdir", "-p", dst, filepath.Join(mnt, "usr/local/share/ca-certificates"), filepath.Join(mnt, "etc/ssl/certs"))
	b.run("cp", "-a", dir+"/.", dst)
	b.run("sh", "-c", `cp /usr/local/share/ca-certificates/*.crt "$1"/usr/local/share/ca-certificates/ 2>/dev/null; cp /etc/ssl/certs/ca-certificates.crt "$1"/etc/ssl/certs/; cp /etc/apt/apt.conf.d/* "$1"/etc/apt/apt.conf.d/ 2>/dev/null; true`, "sh", mnt)
	b.buildah("umount", ctr)
	if script != "" {
		b.buildah("run", "--isolation", "chroot", "--network", "host", ctr, "--", "sh", "-c", script)
	}
	for _, e := range env {
		b.buildah("config", "--env", e, ctr)
	}
	b.buildah("commit", "-q", "--rm", ctr, name)
}
