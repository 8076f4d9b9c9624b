package main

import "testing"

func TestMcp_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"mcp", "x"}, exitUsage, "mcp takes 0 argument(s), got 1"},
	})
}
