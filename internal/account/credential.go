package account

import "syscall"

// Credential is what a process started as a runs with: a's uid, primary
// and supplementary groups. It is nil for root, whose processes keep the
// starter's credentials.
func (a Account) Credential() *syscall.Credential {
	if a.Root() {
		return nil
	}
	groups := make([]uint32, 0, len(a.Groups))
	for _, g := range a.Groups {
		groups = append(groups, uint32(g))
	}
	return &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: groups}
}
