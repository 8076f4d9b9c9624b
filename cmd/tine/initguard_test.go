package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// tine init of /, a home directory, a directory holding one, or one
// holding another person's files is refused without --force, saying why,
// before any state is made (issue 28: tine init ~ took root's whole home).
func TestInit_RefusesHomesAndRootWithoutForce(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	cases := []refusal{
		{[]string{"init", "/"}, exitUsage, "it is the root of the file system"},
		{[]string{"init", home}, exitUsage, "home directory"},
	}
	if os.Geteuid() == 0 {
		if u, err := user.Lookup("tineuser"); err == nil {
			dir := t.TempDir()
			f := filepath.Join(dir, "theirs.txt")
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			if err := os.Chown(f, uid, gid); err != nil {
				t.Fatal(err)
			}
			cases = append(cases, refusal{[]string{"init", dir}, exitUsage, "it holds tineuser's files"})
		}
	}
	checkRefusals(t, cases)
}
