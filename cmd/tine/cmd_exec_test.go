package main

import "testing"

func TestExec_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"exec"}, exitUsage, "exec needs RUN, then -- and a command"},
		{[]string{"exec", "r"}, exitUsage, "exec needs RUN, then --"},
	})
}
