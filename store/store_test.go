package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

func TestURL(t *testing.T) {
	const pg = "postgres://tine@db/tine"
	tests := []struct {
		name, env, config, want string
		err                     error
	}{
		{"Default", "", "", "", nil},
		{"Env", pg, "", pg, nil},
		{"Config", "", "[store]\nurl = \"" + pg + "\"\n", pg, nil},
		{"EnvWins", "postgres://other/x", "[store]\nurl = \"" + pg + "\"\n", "postgres://other/x", nil},
		{"OtherTables", "", "[node]\nname = \"a\"\n", "", nil},
		{"UnknownKey", "", "[store]\nuri = \"" + pg + "\"\n", "", tine.ErrInvalid},
		{"NotTOML", "", "[store\n", "", tine.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv(EnvURL, tt.env)
			if tt.config != "" {
				if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(tt.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := URL(home)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Errorf("URL = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestKind(t *testing.T) {
	for u, want := range map[string]string{
		"":                         "sqlite",
		"postgres://db/tine":       "postgres",
		"postgresql://db/tine":     "postgres",
		"POSTGRES://db/tine":       "postgres",
		"mysql://u:secret@db/tine": "",
		"/var/lib/tine/tine.db":    "",
	} {
		got, err := Kind(u)
		if got != want || (want == "") != errors.Is(err, tine.ErrInvalid) {
			t.Errorf("Kind(%q) = %q, %v; want %q", u, got, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Kind(%q) shows the password: %v", u, err)
		}
	}
}

// Open reads a SQLite store only when its file is there, and never makes
// one.
func TestOpen_NoStoreFile(t *testing.T) {
	t.Setenv(EnvURL, "")
	home := t.TempDir()
	st, err := Open(home)
	if st != nil || err != nil {
		t.Errorf("Open of a state directory without a store = %v, %v; want nothing", st, err)
	}
	if _, err := os.Stat(filepath.Join(home, "tine.db")); err == nil {
		t.Error("Open made a tine.db")
	}
}
