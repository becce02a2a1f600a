package upgradediff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clusterstack-io/clusterstack-operator/internal/render"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
)

// The operator renders a stack's charts and kustomize directories, which a tenant writes, only
// in a child process with bounded memory, CPU time and wall-clock time (Isolated): a chart whose
// templates loop or allocate without end costs that process, never the operator.

// WorkerArg is the first argument that makes the manager binary serve one request as the
// isolated worker (ServeWorker) instead of starting the operator.
const WorkerArg = "upgrade-diff-worker"

// Defaults of Isolated.
const (
	DefaultWorkerTimeout   = 60 * time.Second
	DefaultWorkerMemory    = 512 << 20
	DefaultWorkerMaxOutput = 8 << 20
	// maxWorkerRequest bounds what the worker reads from its standard input.
	maxWorkerRequest = 64 << 20
)

// WorkerRelease is a release as the worker loads it: its name and versions, and the directory
// its stack is in (which exists while the worker runs).
type WorkerRelease struct {
	Release render.Release `json:"release"`
	Dir     string         `json:"dir"`
}

// WorkerRequest is one diff for a pull request: Clusters moving From one release To another,
// rendered as Markdown bounded by Markdown.
type WorkerRequest struct {
	From     WorkerRelease   `json:"from"`
	To       WorkerRelease   `json:"to"`
	Clusters []Cluster       `json:"clusters"`
	Markdown MarkdownOptions `json:"markdown"`
}

// WorkerResponse is the worker's answer: the bounded Markdown, the whole Markdown when the
// bounded one was cut, and the Diff's per-Cluster rendering errors counted.
type WorkerResponse struct {
	Description string `json:"description"`
	Full        string `json:"full,omitempty"`
	Truncated   bool   `json:"truncated,omitempty"`
	Error       string `json:"error,omitempty"`
}

// ServeWorker reads one WorkerRequest from in, computes it and writes a WorkerResponse to out.
// A failure to load a stack or compute the diff is an answer (Error), not an exit status; only
// a broken pipe is returned.
func ServeWorker(in io.Reader, out io.Writer) error {
	var req WorkerRequest
	resp := WorkerResponse{}
	data, err := io.ReadAll(io.LimitReader(in, maxWorkerRequest+1))
	switch {
	case err != nil:
		return err
	case len(data) > maxWorkerRequest:
		resp.Error = fmt.Sprintf("the request holds more than %d bytes", maxWorkerRequest)
	default:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			resp.Error = "decode the request: " + err.Error()
		} else {
			resp = computeRequest(normalizeRequest(req))
		}
	}
	return json.NewEncoder(out).Encode(resp)
}

func computeRequest(req WorkerRequest) WorkerResponse {
	from, err := stack.Load(req.From.Dir)
	if err != nil {
		return WorkerResponse{Error: fmt.Sprintf("load the stack of release %s: %v", req.From.Release.Name, err)}
	}
	to, err := stack.Load(req.To.Dir)
	if err != nil {
		return WorkerResponse{Error: fmt.Sprintf("load the stack of release %s: %v", req.To.Release.Name, err)}
	}
	desc, full, truncated, err := ForProposal(Input{
		From:     Release{Release: req.From.Release, Stack: from},
		To:       Release{Release: req.To.Release, Stack: to},
		Clusters: req.Clusters,
	}, req.Markdown)
	if err != nil {
		return WorkerResponse{Error: err.Error()}
	}
	if !truncated {
		full = ""
	}
	return WorkerResponse{Description: desc, Full: full, Truncated: truncated}
}

// normalizeRequest gives the objects' numbers the types the operator's own reads give them
// (runtime.DefaultUnstructuredConverter): int64 for integers, float64 for the rest, so that the
// worker renders exactly what the operator would.
func normalizeRequest(req WorkerRequest) WorkerRequest {
	for i := range req.Clusters {
		o := &req.Clusters[i].Objects
		o.Cluster, _ = normalizeNumbers(o.Cluster).(map[string]any)
		o.ControlPlane, _ = normalizeNumbers(o.ControlPlane).(map[string]any)
		o.InfraCluster, _ = normalizeNumbers(o.InfraCluster).(map[string]any)
		for j := range o.Overrides {
			for c, v := range o.Overrides[j].Components {
				o.Overrides[j].Components[c], _ = normalizeNumbers(v).(map[string]any)
			}
		}
	}
	return req
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
		return t
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t.String()
	}
	return v
}

// Isolated computes diffs in a child process: Path run with Args (the manager binary with
// WorkerArg), with at most Memory bytes of data segment (RLIMIT_DATA, which Go's heap counts
// against), CPU seconds no more than its Timeout and killed at the Timeout. Its answer is read
// up to MaxOutput bytes. The zero values of the bounds take the defaults.
type Isolated struct {
	// Path and Args run the worker; Env is added to the child's environment (which is otherwise
	// empty but for GOMAXPROCS and GOMEMLIMIT).
	Path string
	Args []string
	Env  []string
	// Timeout bounds the worker's wall-clock and CPU time.
	Timeout time.Duration
	// Memory bounds the worker's data segment, in bytes.
	Memory uint64
	// MaxOutput bounds the answer read, in bytes.
	MaxOutput int64
}

// ErrWorker is a diff the worker could not compute: a limit reached, a crash, an answer that
// is not one.
var ErrWorker = errors.New("the diff could not be computed")

// Compute runs req in a new worker process and returns its answer. An error wraps ErrWorker and
// says which limit the worker reached, if any; an Error in the answer is returned as one too.
func (i Isolated) Compute(ctx context.Context, req WorkerRequest) (WorkerResponse, error) {
	timeout, memory, maxOut := i.Timeout, i.Memory, i.MaxOutput
	if timeout <= 0 {
		timeout = DefaultWorkerTimeout
	}
	if memory == 0 {
		memory = DefaultWorkerMemory
	}
	if maxOut <= 0 {
		maxOut = DefaultWorkerMaxOutput
	}
	input, err := json.Marshal(req)
	if err != nil {
		return WorkerResponse{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, i.Path, i.Args...)
	// The worker gets no credentials of the operator's environment; its Go runtime collects
	// garbage before it reaches the limit, and runs on one CPU.
	cmd.Env = append([]string{"GOMAXPROCS=1", fmt.Sprintf("GOMEMLIMIT=%d", memory*3/4), "HOME=" + os.TempDir(), "TMPDIR=" + os.TempDir()}, i.Env...)
	cmd.Dir = os.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return WorkerResponse{}, err
	}
	var stdout limitedBuffer
	stdout.max = maxOut
	var stderr limitedBuffer
	stderr.max = 16 << 10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		_ = stdin.Close()
		return WorkerResponse{}, fmt.Errorf("%w: start the worker %s: %v", ErrWorker, i.Path, err)
	}
	// The limits are set before the worker is given its request: it reads the request first.
	pid := cmd.Process.Pid
	cpu := uint64(timeout/time.Second) + 1
	limErr := errors.Join(
		unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: memory, Max: memory}, nil),
		unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: cpu, Max: cpu}, nil),
	)
	if limErr != nil {
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		_ = cmd.Wait()
		return WorkerResponse{}, fmt.Errorf("%w: limit the worker: %v", ErrWorker, limErr)
	}
	_, werr := stdin.Write(input)
	_ = stdin.Close()
	err = cmd.Wait()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return WorkerResponse{}, fmt.Errorf("%w: rendering took longer than %s", ErrWorker, timeout)
	case ctx.Err() != nil:
		return WorkerResponse{}, ctx.Err()
	case stdout.over:
		return WorkerResponse{}, fmt.Errorf("%w: the diff is larger than %d bytes", ErrWorker, maxOut)
	case err != nil:
		return WorkerResponse{}, fmt.Errorf("%w: %s", ErrWorker, workerFailure(err, stderr.String(), memory, cpu))
	case werr != nil:
		return WorkerResponse{}, fmt.Errorf("%w: send the request: %v", ErrWorker, werr)
	}
	var resp WorkerResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return WorkerResponse{}, fmt.Errorf("%w: the worker's answer: %v", ErrWorker, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("%w: %s", ErrWorker, resp.Error)
	}
	return resp, nil
}

// workerFailure says why the worker ended, from its exit and the first line it printed.
func workerFailure(err error, stderr string, memory, cpu uint64) string {
	switch {
	case strings.Contains(err.Error(), "CPU time limit"):
		return fmt.Sprintf("rendering used more than %d CPU seconds", cpu)
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "failed to allocate") && strings.Contains(stderr, "errno: 12"): // ENOMEM, as a -race build says it
		return fmt.Sprintf("rendering needed more than %d MiB of memory", memory>>20)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(stderr), "\n")
	if len(first) > 300 {
		first = first[:300] + "…"
	}
	if first == "" {
		return "the worker " + err.Error()
	}
	return fmt.Sprintf("the worker %s: %s", err.Error(), first)
}

// limitedBuffer keeps the first max bytes written and records whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int64
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - int64(b.Len()); int64(len(p)) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
