package account

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestPasswdEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(path, []byte("root:x:0:0:root:/root:/bin/bash\nann:x:1001:1001:Ann,,,:/home/ann:/bin/zsh\n"), 0o644)
	name, home, shell, ok := passwdEntry(path, 1001)
	if !ok || name != "ann" || home != "/home/ann" || shell != "/bin/zsh" {
		t.Errorf("passwdEntry(1001) = %q %q %q %v", name, home, shell, ok)
	}
	if _, _, _, ok := passwdEntry(path, 1002); ok {
		t.Error("passwdEntry(1002) found an entry")
	}
}

// ParsePasswd, the one parser of the password database (Lookup's and
// secrets.SystemFiles'), skips short lines, strips a CR and keeps an entry
// whose uid is not a number as -1.
func TestParsePasswd(t *testing.T) {
	got := ParsePasswd("root:x:0:0:root:/root:/bin/bash\r\nbroken line\n\nodd:x:zz:1::/home/odd:\nann:x:1001:1001:Ann,,,:/home/ann:/bin/zsh")
	want := []User{{"root", 0, "/root", "/bin/bash"}, {"odd", -1, "/home/odd", ""}, {"ann", 1001, "/home/ann", "/bin/zsh"}}
	if !slices.Equal(got, want) {
		t.Errorf("ParsePasswd = %+v\nwant %+v", got, want)
	}
	if u := readPasswd(filepath.Join(t.TempDir(), "missing")); u != nil {
		t.Errorf("readPasswd(missing) = %+v", u)
	}
}

func TestLookupUnknown(t *testing.T) {
	a := Lookup(4242421, 4242421)
	if a.Name != "4242421" || a.Home != "/" || a.Shell != "/bin/sh" || a.Groups != nil {
		t.Errorf("Lookup(unknown) = %+v", a)
	}
}

func TestEnv(t *testing.T) {
	a := Account{UID: 1001, GID: 1001, Name: "ann", Home: "/home/ann", Shell: "/bin/zsh"}
	root := []string{"HOME=/root", "USER=root", "PATH=/root/go/bin:/usr/bin", "TERM=xterm", "PATH=/dup"}
	got := a.Env(root, 0)
	for _, want := range []string{"HOME=/home/ann", "USER=ann", "LOGNAME=ann", "SHELL=/bin/zsh", "TERM=xterm", "PATH=" + a.DefaultPath()} {
		if !slices.Contains(got, want) {
			t.Errorf("Env(root's) = %q, lacks %q", got, want)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(got), func(kv string) bool { return len(kv) < 5 || kv[:5] != "PATH=" })); n != 1 {
		t.Errorf("Env(root's) has %d PATH entries: %q", n, got)
	}
	own := a.Env([]string{"PATH=/home/ann/bin:/usr/bin", "HOME=/tmp/elsewhere"}, 1001)
	if Getenv(own, "PATH") != "/home/ann/bin:/usr/bin" || Getenv(own, "HOME") != "/tmp/elsewhere" {
		t.Errorf("Env(own) = %q, want the owner's own PATH and HOME kept", own)
	}
}

// TestEnvDropsOthersStores: root's CODEX_HOME, CLAUDE_CONFIG_DIR and XDG
// directories (a daemon's) do not follow into another user's environment,
// whose agents would look for their sessions in root's home; the owner's
// own are kept.
func TestEnvDropsOthersStores(t *testing.T) {
	a := Account{UID: 1001, GID: 1001, Name: "ann", Home: "/home/ann", Shell: "/bin/zsh"}
	root := []string{"HOME=/root", "CODEX_HOME=/root/.codex", "CLAUDE_CONFIG_DIR=/root/.claude", "XDG_CONFIG_HOME=/root/.config", "TERM=xterm"}
	got := a.Env(root, 0)
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"} {
		if v := Getenv(got, k); v != "" {
			t.Errorf("Env(root's) keeps %s=%s", k, v)
		}
	}
	if Getenv(got, "TERM") != "xterm" {
		t.Errorf("Env(root's) = %q, lost TERM", got)
	}
	own := a.Env([]string{"CODEX_HOME=/home/ann/codex"}, 1001)
	if Getenv(own, "CODEX_HOME") != "/home/ann/codex" {
		t.Errorf("Env(own) = %q, want the owner's CODEX_HOME kept", own)
	}
}

func TestCredential(t *testing.T) {
	if c := (Account{UID: 0, GID: 0}).Credential(); c != nil {
		t.Errorf("root's credential = %+v, want nil", c)
	}
	c := Account{UID: 1001, GID: 1002, Groups: []int{27}}.Credential()
	if c == nil || c.Uid != 1001 || c.Gid != 1002 || !slices.Equal(c.Groups, []uint32{27}) {
		t.Errorf("credential = %+v", c)
	}
}

// TestEnvKeepsNothingOfAnothers: an environment of another user's (the
// system daemon's, root's, when it starts a normal user's services,
// agents, effects) gives a's process only the locale and the terminal:
// none of root's keys, tokens or agent sockets reach another user's
// processes (a daemon started from root's shell had them all).
func TestEnvKeepsNothingOfAnothers(t *testing.T) {
	a := Account{UID: 1001, GID: 1001, Name: "ann", Home: "/home/ann", Shell: "/bin/zsh"}
	root := []string{"HOME=/root", "ANTHROPIC_API_KEY=sk-root", "AWS_SECRET_ACCESS_KEY=x", "SSH_AUTH_SOCK=/tmp/ssh-root/agent",
		"GITHUB_TOKEN=ghp", "LD_PRELOAD=/root/evil.so", "LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=en_GB", "TZ=UTC", "TERM=xterm"}
	got := a.Env(root, 0)
	for _, k := range []string{"ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "GITHUB_TOKEN", "LD_PRELOAD"} {
		if v := Getenv(got, k); v != "" {
			t.Errorf("Env(root's) passes %s=%s to ann", k, v)
		}
	}
	for _, kv := range []string{"LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=en_GB", "TZ=UTC", "TERM=xterm", "HOME=/home/ann"} {
		if !slices.Contains(got, kv) {
			t.Errorf("Env(root's) = %q, lacks %s", got, kv)
		}
	}
	own := a.Env([]string{"ANTHROPIC_API_KEY=sk-ann"}, 1001)
	if Getenv(own, "ANTHROPIC_API_KEY") != "sk-ann" {
		t.Errorf("Env(own) = %q, want ann's own key kept", own)
	}
}
