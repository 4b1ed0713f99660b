package browser

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The recorder sees what the page tests rely on it to see: a page that
// logs an error, throws and fetches an image is caught at all three, and a
// quiet page leaves nothing.
func TestWhatAPageDidIsRecorded(t *testing.T) {
	dir := t.TempDir()
	noisy := filepath.Join(dir, "noisy.html")
	quiet := filepath.Join(dir, "quiet.html")
	os.WriteFile(noisy, []byte(`<!DOCTYPE html><title>noisy</title><img src="http://127.0.0.1:9/x.png" alt="">
<script>console.error("broken"); throw new Error("thrown")</script>`), 0o644)
	os.WriteFile(quiet, []byte(`<!DOCTYPE html><title>quiet</title><p id="p">hello</p><script>console.log("fine")</script>`), 0o644)
	b, err := Start(filepath.Join(dir, "profile"), 800, 600)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	p, err := b.Open("file://"+noisy, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(p.Errors()) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	errs := strings.Join(p.Errors(), "\n")
	if !strings.Contains(errs, "broken") || !strings.Contains(errs, "thrown") {
		t.Errorf("errors of the noisy page: %q, want console.error's and the exception's", errs)
	}
	if !slices.Contains(p.Requests(), "http://127.0.0.1:9/x.png") {
		t.Errorf("requests of the noisy page: %q, want its image", p.Requests())
	}

	p, err = b.Open("file://"+quiet, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Eval[string](p, `document.getElementById("p").textContent`); err != nil || got != "hello" {
		t.Errorf("eval: %q, %v", got, err)
	}
	if len(p.Errors()) > 0 || len(p.Requests()) > 0 {
		t.Errorf("a quiet page: errors %q, requests %q", p.Errors(), p.Requests())
	}
	png, err := p.Screenshot()
	if err != nil || len(png) < 100 || string(png[1:4]) != "PNG" {
		t.Errorf("screenshot: %d bytes, %v", len(png), err)
	}
}
