package schedule_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/schedule"
	"github.com/stepline/stepline/shared/store/sqlite"
)

type fires struct {
	mu  sync.Mutex
	got []string
}

func (f *fires) fire(_ context.Context, e schedule.Entry, tick time.Time, runID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, e.Pipeline+"@"+tick.UTC().Format("15:04"))
	return nil
}

func (f *fires) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(t *testing.T, name, expr, tz string) schedule.Entry {
	t.Helper()
	e, err := schedule.NewEntry(name, expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var ids int

func newScheduler(t *testing.T, st *sqlite.Store, f *fires, holder string, entries ...schedule.Entry) *schedule.Scheduler {
	t.Helper()
	_, err := schedule.New(schedule.Config{
		Store: st, Fire: f.fire, Clock: nil, Grace: 10 * time.Minute, Holder: holder,
		RunID: func() string { ids++; return fmt.Sprintf("run-%d", ids) },
	}, entries)
	if err == nil {
		t.Fatal("a scheduler without a clock was made")
	}
	s, err := schedule.New(schedule.Config{
		Store: st, Fire: f.fire, Clock: fakeClock{}, Grace: 10 * time.Minute, Holder: holder,
		RunID: func() string { ids++; return fmt.Sprintf("run-%d", ids) },
	}, entries)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type fakeClock struct{}

func (fakeClock) Now() time.Time                                   { return time.Time{} }
func (fakeClock) Sleep(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() }

var base = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // a Monday

func at(hm string) time.Time {
	t, _ := time.Parse("15:04:05", hm)
	return base.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second)
}

func check(t *testing.T, s *schedule.Scheduler, now time.Time) {
	t.Helper()
	if _, err := s.Check(context.Background(), now); err != nil {
		t.Fatal(err)
	}
}

func same(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
}

// The catch-up rule at start: the latest missed tick fires once when it is
// at most Grace old (below, at and above the boundary).
func TestCatchUpAtStart(t *testing.T) {
	tests := []struct {
		name string
		now  time.Time
		want []string
	}{
		{"on the tick", at("12:00:00"), []string{"p@12:00"}},
		{"a grace minus a second after", at("12:09:59"), []string{"p@12:00"}},
		{"a grace after", at("12:10:00"), nil},
		{"a grace and a second after", at("12:10:01"), nil},
		{"a second before the tick", at("11:59:59"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fires{}
			s := newScheduler(t, openStore(t), f, "a", entry(t, "p", "0,30 * * * *", ""))
			check(t, s, tt.now)
			same(t, f.list(), tt.want...)
		})
	}
}

// Several missed ticks collapse into one fire, for the latest.
func TestMissedTicksFireOnce(t *testing.T) {
	f := &fires{}
	s := newScheduler(t, openStore(t), f, "a", entry(t, "p", "* * * * *", ""))
	check(t, s, at("12:00:30"))
	check(t, s, at("12:05:30")) // asleep for five ticks
	check(t, s, at("12:05:40"))
	check(t, s, at("12:06:00"))
	same(t, f.list(), "p@12:00", "p@12:05", "p@12:06")
}

// A restart does not fire a tick twice: the new process (another holder)
// finds the tick claimed.
func TestRestartNeverFiresTwice(t *testing.T) {
	st := openStore(t)
	f := &fires{}
	first := newScheduler(t, st, f, "a", entry(t, "p", "0 * * * *", ""))
	check(t, first, at("12:00:05"))
	second := newScheduler(t, st, f, "b", entry(t, "p", "0 * * * *", ""))
	check(t, second, at("12:01:00"))
	check(t, second, at("13:00:00"))
	same(t, f.list(), "p@12:00", "p@13:00")
}

// Processes sharing a store fire each tick once between them.
func TestConcurrentSchedulers(t *testing.T) {
	st := openStore(t)
	f := &fires{}
	var wg sync.WaitGroup
	for i := range 6 {
		s := newScheduler(t, st, f, fmt.Sprintf("h%d", i), entry(t, "p", "*/5 * * * *", ""), entry(t, "q", "0 12 * * *", ""))
		wg.Add(1)
		go func() {
			defer wg.Done()
			check(t, s, at("12:00:00"))
			check(t, s, at("12:05:00"))
		}()
	}
	wg.Wait()
	got := map[string]int{}
	for _, k := range f.list() {
		got[k]++
	}
	if len(got) != 3 || got["p@12:00"] != 1 || got["p@12:05"] != 1 || got["q@12:00"] != 1 {
		t.Fatalf("fires %v, want p@12:00, p@12:05 and q@12:00 once each", got)
	}
}

func TestTimeZoneAndUpcoming(t *testing.T) {
	f := &fires{}
	s := newScheduler(t, openStore(t), f, "a",
		entry(t, "berlin", "0 13 * * *", "Europe/Berlin"), entry(t, "utc", "0 13 * * *", ""))
	check(t, s, at("12:00:00")) // 13:00 in Berlin (CET)
	same(t, f.list(), "berlin@12:00")
	up := s.Upcoming(at("12:00:00"))
	if len(up) != 2 || up[0].Pipeline != "berlin" || !up[0].NextRun.Equal(at("12:00:00").Add(24*time.Hour)) ||
		up[1].Pipeline != "utc" || up[1].TimeZone != "UTC" || !up[1].NextRun.Equal(at("13:00:00")) {
		t.Fatalf("upcoming %+v", up)
	}
}

func TestNewEntryErrors(t *testing.T) {
	if _, err := schedule.NewEntry("p", "61 * * * *", ""); err == nil {
		t.Error("a bad cron was accepted")
	}
	if _, err := schedule.NewEntry("p", "* * * * *", "Mars/Olympus"); err == nil {
		t.Error("an unknown zone was accepted")
	}
}

// steppingClock advances by each wait asked for, n times; then it waits
// for the context.
type steppingClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	left  int
	done  chan struct{}
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	if c.left == 0 {
		c.mu.Unlock()
		close(c.done)
		<-ctx.Done()
		return ctx.Err()
	}
	c.left--
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// TestRun: the loop sleeps until the next tick (at most a minute) and
// fires each tick once as the clock reaches it.
func TestRun(t *testing.T) {
	f := &fires{}
	clock := &steppingClock{now: at("12:00:30"), left: 4, done: make(chan struct{})}
	s, err := schedule.New(schedule.Config{
		Store: openStore(t), Fire: f.fire, Clock: clock, Grace: time.Minute, Holder: "a",
		RunID: func() string { ids++; return fmt.Sprintf("run-%d", ids) },
	}, []schedule.Entry{entry(t, "p", "*/2 * * * *", "")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	<-clock.done
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("Run = %v", err)
	}
	// 12:00:30 fires 12:00 (30 s old, within the minute's grace), then
	// waits a minute at most at a time: to 12:01:30 (nothing due), 30 s
	// to the 12:02 tick, then to 12:03 (nothing due) and 12:04.
	same(t, f.list(), "p@12:00", "p@12:02", "p@12:04")
	want := []time.Duration{time.Minute, 30 * time.Second, time.Minute, time.Minute}
	if fmt.Sprint(clock.waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v", clock.waits, want)
	}
}
