package main

import "testing"

func TestRollback_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"rollback"}, exitUsage, "rollback takes 1 argument(s), got 0"},
		{[]string{"rollback", "r"}, exitUsage, "rollback needs --to VERSION"},
	})
}
