// Package browsertest starts a headless Chromium for tests that drive the
// dashboard as a person's browser would (chromedp).
package browsertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is where Debian's package puts the browser (.ci/run installs it).
const Chromium = "/usr/bin/chromium"

// New starts a headless Chromium with a fresh profile and returns its
// context, which ends after timeout or at t's cleanup; t is skipped when
// the browser is missing.
func New(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		t.Skipf("needs Chromium at %s (apt-get install chromium, as .ci/run does): %v", Chromium, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	return ctx
}
