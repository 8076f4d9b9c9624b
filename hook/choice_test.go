package hook

import "testing"

func TestParseChoice(t *testing.T) {
	tests := []struct {
		prompt string
		want   string // "" = not a choice
	}{
		{"approve a1b2c3d4", "approve a1b2c3d4"},
		{"  Approve a1b2c3d4.  ", "approve a1b2c3d4"},
		{"reject a1b2c3d4", "refuse a1b2c3d4"},
		{"tine: approve a1b2c3d4", "approve a1b2c3d4"},
		{"merge source-2", "merge source-2"},
		{"Merge source-2!", "merge source-2"},
		{"choose source-1", "choose source-1"},
		{"pick fork 2", "choose fork 2"},
		{"select fork #3", "choose fork 3"},
		{"select app/try-sqlite", "choose app/try-sqlite"},
		{"discard source-3", "discard source-3"},
		{"promote source-2", "promote source-2"},
		{"merge it", ""},
		{"select all", ""},
		{"pick main", ""},
		{"please merge source-2", ""},
		{"merge source-2 and deploy", ""},
		{"don't merge source-2", ""},
		{"approve this plan", ""},
		{"approve this", ""},
		{"approve apologize", ""},
		{"approve aqrstuvwx", "approve aqrstuvwx"},
		{"approve A1B2C3D4", ""},
		{"pick fork 0", ""},
		{"merge source-2\nthen push", ""},
		{"", ""},
	}
	for _, tt := range tests {
		c, ok := ParseChoice(tt.prompt)
		got := ""
		if ok {
			got = c.String()
		}
		if got != tt.want {
			t.Errorf("ParseChoice(%q) = %q, want %q", tt.prompt, got, tt.want)
		}
	}
}

func TestIsTestCommand(t *testing.T) {
	tests := map[string]bool{
		"go test ./...":                       true,
		"go test -race ./hook/ -run Hook":     true,
		"cd web && npm test":                  true,
		"npm run test:unit":                   true,
		"pytest -x tests/":                    true,
		"python3 -m pytest":                   true,
		"uv run pytest":                       true,
		"cargo test --all":                    true,
		"make test":                           true,
		"make test-integration":               true,
		"time go test ./...":                  true,
		"env CI=1 npx jest":                   true,
		"bundle exec rspec":                   true,
		"bash -lc 'go test ./...'":            true,
		"timeout 60 cargo nextest run":        true,
		"./gradlew test":                      true,
		"go build ./...":                      false,
		"echo go test":                        false,
		"git commit -m 'make test pass'":      false,
		"npm install":                         false,
		"make":                                false,
		"python3 missing.py":                  false,
		"grep -r pytest .":                    false,
		"cat <<EOF\ngo test\nEOF":             false,
		"if true; then go vet ./...; fi":      false,
		"for d in a b; do go test ./$d; done": true,
	}
	for cmd, want := range tests {
		if got := IsTestCommand(cmd); got != want {
			t.Errorf("IsTestCommand(%q) = %v, want %v", cmd, got, want)
		}
	}
}
