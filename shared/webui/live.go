package webui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// heartbeat keeps an idle live view's connection open through proxies.
const heartbeat = 15 * time.Second

// writeWait bounds one write of a live view.
const writeWait = 10 * time.Second

// runEvents streams a run's page as server-sent events while it runs:
// an "update" event with the live part of the page (the HTML the page
// shows, escaped as the page is) whenever it changes, then "end" with
// the run's final status. The store is read every Poll.
func (h *Handler) runEvents(w http.ResponseWriter, r *http.Request, v viewer) {
	select {
	case h.streams <- struct{}{}:
		defer func() { <-h.streams }()
	default:
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many live views", http.StatusServiceUnavailable)
		return
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), MaxStreamTime)
	defer cancel()
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	send := func(s string) error {
		if err := rc.SetWriteDeadline(time.Now().Add(writeWait)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := fmt.Fprint(w, s); err != nil {
			return err
		}
		return rc.Flush()
	}
	w.WriteHeader(http.StatusOK)
	if send("retry: 3000\n\n") != nil {
		return
	}
	part := h.pages["run"].Lookup("partial-live")
	var last []byte
	tick := time.NewTicker(h.cfg.Poll)
	defer tick.Stop()
	quiet := time.Now()
	for {
		d, err := h.runData(r.WithContext(ctx), v, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, errHidden) {
				_ = send("event: end\ndata: not found\n\n")
				return
			}
			h.log.Warn("web UI live view", "run", id, "err", err)
		} else {
			var buf bytes.Buffer
			if err := part.Execute(&buf, page{Prefix: h.prefix, V: v, Data: d}); err != nil {
				h.log.Error("web UI live view render", "run", id, "err", err)
				return
			}
			if !bytes.Equal(buf.Bytes(), last) {
				last = buf.Bytes()
				if send(event("update", buf.String())) != nil {
					return
				}
				quiet = time.Now()
			}
			if d.Run.Status.Terminal() {
				_ = send(event("end", string(d.Run.Status)))
				return
			}
		}
		if time.Since(quiet) > heartbeat {
			if send(": keep-alive\n\n") != nil {
				return
			}
			quiet = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// event formats a server-sent event: each line of data on its own
// "data:" line.
func event(name, data string) string {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	for line := range strings.SplitSeq(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return b.String()
}
