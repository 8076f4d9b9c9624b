package secrets

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tinehq/tine/internal/account"
)

func defaults() Policy {
	files := []string{}
	for _, f := range DefaultFiles {
		files = append(files, "~/"+f)
	}
	return Policy{Env: DefaultEnv, Files: append(files, ".env"), Inherit: DefaultInherit}
}

func TestStrip(t *testing.T) {
	p := defaults()
	env := []string{"PATH=/bin", "GITHUB_TOKEN=g", "AWS_SECRET_ACCESS_KEY=a", "DB_PASSWORD=p", "STRIPE_SECRET_KEY=s",
		"ANTHROPIC_API_KEY=k", "SSH_AUTH_SOCK=/tmp/agent", "HOME=/home/u", "TOKENIZER=x", "MY_API_KEY=m", "GITHUB_TOKEN=again"}
	out, withheld := p.Strip(env, []string{"MY_API_KEY"})
	wantOut := []string{"PATH=/bin", "ANTHROPIC_API_KEY=k", "HOME=/home/u", "TOKENIZER=x", "MY_API_KEY=m"}
	wantWithheld := []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "STRIPE_SECRET_KEY", "SSH_AUTH_SOCK"}
	if !slices.Equal(out, wantOut) || !slices.Equal(withheld, wantWithheld) {
		t.Errorf("Strip = %q, withheld %q;\nwant %q, withheld %q", out, withheld, wantOut, wantWithheld)
	}
	if got := p.Inherited(env); !slices.Equal(got, []string{"ANTHROPIC_API_KEY"}) {
		t.Errorf("Inherited = %q", got)
	}
}

func TestHidden(t *testing.T) {
	p := defaults()
	p.Files = append(p.Files, "/etc/secret", "~/.ssh")
	p.Inherit = append(p.Inherit, "/home/u/.aws", "~/.npmrc", "~/.cargo/../.pypirc") // a file kept as written in files, or not
	got := p.Hidden("/home/u", "/work/app")
	want := []string{"/home/u/.ssh", "/home/u/.config/gh", "/home/u/.netrc", "/home/u/.git-credentials",
		"/home/u/.docker/config.json", "/home/u/.yarnrc.yml", "/home/u/.cargo/credentials", "/home/u/.cargo/credentials.toml",
		"/home/u/.gem/credentials", "/home/u/.config/gcloud", "/home/u/.azure", "/home/u/.kube/config",
		"/home/u/.pgpass", "/work/app/.env", "/etc/secret"}
	if !slices.Equal(got, want) {
		t.Errorf("Hidden = %q\nwant %q", got, want)
	}
}

// Another user's credential files and the host's are hidden from a fork;
// its owner's own are not listed here (Hidden has them).
func TestSystemFiles(t *testing.T) {
	other, owner := t.TempDir(), t.TempDir()
	for _, home := range []string{other, owner} {
		if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	passwd := "root:x:0:0:root:/root:/bin/bash\nu:x:1001:1001::" + other + ":/bin/sh\nme:x:1002:1002::" + owner + ":/bin/sh\nbroken line\n"
	got := SystemFiles(account.ParsePasswd(passwd), owner)
	if !slices.Contains(got, filepath.Join(other, ".ssh")) {
		t.Errorf("another user's ~/.ssh is not hidden: %v", got)
	}
	if slices.Contains(got, filepath.Join(owner, ".ssh")) {
		t.Errorf("the owner's own home is listed: %v", got)
	}
	if _, err := os.Stat("/etc/shadow"); err == nil && !slices.Contains(got, "/etc/shadow") {
		t.Errorf("/etc/shadow is not hidden: %v", got)
	}
	for _, f := range got {
		if _, err := os.Lstat(f); err != nil {
			t.Errorf("%s does not exist but is listed", f)
		}
	}
}
