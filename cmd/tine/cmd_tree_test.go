package main

import "testing"

func TestTree_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"tree", "a", "b"}, exitUsage, "tree takes at most 1 argument(s), got 2"},
	})
}
