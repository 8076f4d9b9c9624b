// Package account describes the user every process of a run runs as (its
// workspace's owner): ids, supplementary groups, and the environment of
// their login.
package account

import (
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// Account is a user as processes run as them.
type Account struct {
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`
	Groups []int  `json:"groups,omitempty"` // supplementary groups
	Name   string `json:"name"`
	Home   string `json:"home"`
	Shell  string `json:"shell"`
}

// Lookup returns the account of uid with primary group gid, from the
// password and group databases. A uid without an entry gets its number as
// name, / as home and /bin/sh as shell, and no supplementary groups.
func Lookup(uid, gid int) Account {
	a := Account{UID: uid, GID: gid, Name: strconv.Itoa(uid), Home: "/", Shell: "/bin/sh"}
	if name, home, shell, ok := passwdEntry(PasswdFile, uid); ok {
		a.Name, a.Home, a.Shell = name, home, shell
	} else if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		a.Name, a.Home = u.Username, u.HomeDir
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if ids, err := u.GroupIds(); err == nil {
			for _, s := range ids {
				if g, err := strconv.Atoi(s); err == nil && g != gid {
					a.Groups = append(a.Groups, g)
				}
			}
		}
	}
	if a.Home == "" {
		a.Home = "/"
	}
	if a.Shell == "" {
		a.Shell = "/bin/sh"
	}
	return a
}

// PasswdFile is the password database Lookup and Users read.
const PasswdFile = "/etc/passwd"

// User is one entry of a password database (passwd(5)).
type User struct {
	Name  string
	UID   int // -1 when the field is not a number
	Home  string
	Shell string
}

// ParsePasswd returns the entries of text, in the format of /etc/passwd;
// a line with fewer than seven fields is skipped.
func ParsePasswd(text string) []User {
	var out []User
	for line := range strings.Lines(text) {
		fields := strings.Split(strings.TrimRight(line, "\r\n"), ":")
		if len(fields) < 7 {
			continue
		}
		uid, err := strconv.Atoi(fields[2])
		if err != nil {
			uid = -1
		}
		out = append(out, User{Name: fields[0], UID: uid, Home: fields[5], Shell: fields[6]})
	}
	return out
}

// Users returns the entries of PasswdFile; none when it cannot be read.
func Users() []User { return readPasswd(PasswdFile) }

func readPasswd(path string) []User {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return ParsePasswd(string(b))
}

// passwdEntry reads uid's name, home and shell from a passwd file.
func passwdEntry(path string, uid int) (name, home, shell string, ok bool) {
	for _, u := range readPasswd(path) {
		if u.UID == uid {
			return u.Name, u.Home, u.Shell, true
		}
	}
	return "", "", "", false
}

// Root reports whether the account is root's: processes keep the
// supervisor's credentials.
func (a Account) Root() bool { return a.UID == 0 }

// DefaultPath is the PATH a process of a gets when the environment it is
// given is someone else's.
func (a Account) DefaultPath() string {
	if a.Root() {
		return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	return a.Home + "/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"
}

// Env returns env made a's. When env is a's own (from is the uid whose
// environment it is) it is kept as it is, with a PATH. Else it is another
// user's (the system daemon's, root's, starting a's services, agents and
// effects): a's process gets only its locale and terminal (Passed), and
// HOME, USER, LOGNAME and SHELL of a's, PATH DefaultPath. Nothing else of
// another user's goes along: their keys and tokens, their agent sockets
// (SSH_AUTH_SOCK), their PATH (directories a cannot read or should not
// trust), their LD_ variables, and the variables that move their stores
// out of their home (root's CODEX_HOME or CLAUDE_CONFIG_DIR would send a's
// agents to root's sessions).
func (a Account) Env(env []string, from int) []string {
	if from == a.UID {
		if Getenv(env, "PATH") == "" {
			env = Setenv(env, "PATH="+a.DefaultPath())
		}
		return env
	}
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); Passed(k) {
			out = append(out, kv)
		}
	}
	return Setenv(out, "HOME="+a.Home, "USER="+a.Name, "LOGNAME="+a.Name, "SHELL="+a.Shell, "PATH="+a.DefaultPath())
}

// Passed reports whether the variable key of one user's environment goes
// along into a process of another's: the locale (LANG, LANGUAGE, LC_*),
// the time zone and the terminal, nothing that is the first user's own.
func Passed(key string) bool {
	switch key {
	case "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR":
		return true
	}
	return strings.HasPrefix(key, "LC_")
}

// Unsetenv returns env without any entry of keys.
func Unsetenv(env []string, keys ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	return out
}

// Setenv returns env with each KEY=VALUE of kvs set, replacing every
// earlier entry of the key (a C program's getenv reads the first).
func Setenv(env []string, kvs ...string) []string {
	out := make([]string, 0, len(env)+len(kvs))
	drop := map[string]bool{}
	for _, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, kvs...)
}

// Getenv returns the value of key in env, the last entry winning as in
// Setenv; "" when it is absent.
func Getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
