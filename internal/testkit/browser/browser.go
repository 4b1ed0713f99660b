// Package browser opens pages in a real headless Chromium for the tests,
// through chromedp: what a page wrote to its console, every request it
// made, what a script in it says, and its screenshot.
//
// Chromium is Debian's chromium package (scripts/install-deps.sh installs
// it for make test), or the program RSAG_CHROMIUM names. It runs with a
// fresh profile and without the background services that would reach out
// to the network (component updates, sync, field trials): on a closed
// network their refused connections would read as the page's.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Find returns the Chromium to run: $RSAG_CHROMIUM, else the first of
// chromium, chromium-browser, google-chrome on PATH.
func Find() (string, error) {
	if p := os.Getenv("RSAG_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium, chromium-browser or google-chrome on PATH: install Debian's chromium package " +
		"(scripts/install-deps.sh --test, which make test runs), or set RSAG_CHROMIUM to a Chromium binary")
}

// Browser is one headless Chromium with its own profile directory.
type Browser struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Start starts Chromium with profile (an empty directory) as its profile,
// and a window of width x height CSS pixels.
func Start(profile string, width, height int) (*Browser, error) {
	path, err := Find()
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // root in CI and containers
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{ctx: ctx, cancel: func() { cancel(); acancel() }}
	// Start it now, so that a Chromium that cannot start says so here.
	if err := chromedp.Do(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return b, nil
}

// Close ends the browser.
func (b *Browser) Close() { b.cancel() }

// Page is one page opened in the browser, and what it did while it
// loaded and since.
type Page struct {
	URL string
	ctx context.Context

	mu       sync.Mutex
	errors   []string // console errors, uncaught exceptions, browser log errors
	requests []string // every URL requested other than the page's own
}

// Open opens url in the browser's tab and waits for it to load; limit
// bounds the whole. The page keeps recording its console and requests
// until the next Open.
func (b *Browser) Open(url string, limit time.Duration) (*Page, error) {
	p := &Page{URL: url, ctx: b.ctx}
	if err := chromedp.Listen(b.ctx, p.record); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, limit)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return nil, fmt.Errorf("opening %s: %w", url, err)
	}
	return p, nil
}

func (p *Page) record(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
			}
			p.errors = append(p.errors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		p.errors = append(p.errors, "exception: "+msg)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			p.errors = append(p.errors, fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		if ev.Request.URL != p.URL {
			p.requests = append(p.requests, ev.Request.URL)
		}
	}
}

// Errors are the console errors, uncaught exceptions and browser log
// errors seen so far.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

// Requests are the URLs the page requested besides its own.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// Eval runs a JavaScript expression in the page and decodes its value
// into T.
func Eval[T any](p *Page, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// EvalPrint is Eval with the page laid out for print (the print
// stylesheet's media), then laid out for the screen again.
func EvalPrint[T any](p *Page, expr string) (T, error) {
	var zero T
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
		return zero, err
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if _, rerr := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: ""}); err == nil {
		err = rerr
	}
	return v, err
}

// Resize lays the page out again in a window of width x height CSS
// pixels, as a reader's narrower or wider screen would.
func (p *Page) Resize(width, height int) error {
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	return chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height)))
}

// Click clicks the first element a CSS selector finds.
func (p *Page) Click(selector string) error {
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	return chromedp.Do(ctx, chromedp.Click(chromedp.CSS(selector)))
}

// Screenshot is a PNG of the whole page, as tall as it is.
func (p *Page) Screenshot() ([]byte, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.FullScreenshot(100))
}

// Viewport is a PNG of what the window shows, from the top.
func (p *Page) Viewport() ([]byte, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.CaptureScreenshot())
}
