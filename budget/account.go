package budget

import (
	"fmt"
	"maps"
	"sort"
)

// Account is one configured [[account]] entry: the environment variables
// (API keys, config directories) that make an agent spend from it.
type Account struct {
	Name string
	Env  map[string]string
}

// Environ returns the account's variables as sorted "KEY=VALUE" strings, to
// append to a process environment.
func (a Account) Environ() []string {
	env := make([]string, 0, len(a.Env))
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// Assign gives each of n forks its own account: fork i gets assigned[i].
// With no accounts, every fork uses the ambient environment: assigned is nil
// and n is returned unchanged. With fewer accounts than n, the number of
// forks is reduced to len(accounts) and note says so in one line for the
// caller to print; otherwise note is empty. Accounts beyond n are unused.
// The returned accounts are copies; their Env maps may be modified freely.
// Assign does not check that account names or environments are distinct.
func Assign(n int, accounts []Account) (assigned []Account, reducedTo int, note string) {
	if len(accounts) == 0 || n <= 0 {
		return nil, n, ""
	}
	reducedTo = n
	if len(accounts) < n {
		reducedTo = len(accounts)
		note = fmt.Sprintf("only %d account(s) configured for %d forks: running %d forks, one per account", len(accounts), n, reducedTo)
	}
	assigned = make([]Account, reducedTo)
	for i := range assigned {
		assigned[i] = Account{Name: accounts[i].Name, Env: maps.Clone(accounts[i].Env)}
	}
	return assigned, reducedTo, note
}
