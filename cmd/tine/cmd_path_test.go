package main

import "testing"

func TestPath_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"path"}, exitUsage, "path takes 1 argument(s), got 0"},
	})
}
