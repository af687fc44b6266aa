package stream

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk"
)

// Pipeline is a graph of typed stages, compiled by Build into ordinary
// operators. Stages are added by the functions of this package (From,
// Map, KeyBy, …), each taking the stream of the stage before it. A
// Pipeline is not safe for concurrent use while it is being built; the
// factories Build returns may be used from any goroutine.
type Pipeline struct {
	name   string
	stages []*stage
	byName map[string]*stage
	err    error // the first bad stage, returned by Build

	built     bool
	factories []sdk.Factory
	buildErr  error
}

// New returns an empty pipeline. Its name prefixes the names of the
// operators and streams Build makes ("<name>.<stage>"), so two pipelines
// of one runtime need different names.
func New(name string) *Pipeline {
	p := &Pipeline{name: name, byName: map[string]*stage{}}
	if err := sdk.ValidName(name); err != nil {
		p.err = fmt.Errorf("stream: pipeline name: %w", err)
	}
	return p
}

// Name returns the pipeline's name.
func (p *Pipeline) Name() string { return p.name }

// kind is a kind of stage.
type kind uint8

const (
	kindFrom kind = iota + 1
	kindMap
	kindFilter
	kindFlatMap
	kindKeyBy
	kindAggregate
	kindProcess
	kindTo
	kindOutput
	kindIntervalJoin
	kindWindowJoin
)

var kindNames = [...]string{kindFrom: "From", kindMap: "Map", kindFilter: "Filter", kindFlatMap: "FlatMap",
	kindKeyBy: "KeyBy", kindAggregate: "Aggregate", kindProcess: "Process", kindTo: "To", kindOutput: "Output",
	kindIntervalJoin: "IntervalJoin", kindWindowJoin: "WindowJoin"}

// String returns the name of the function that adds the stage.
func (k kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// runsValues reports whether a stage of kind k hands Go values to the
// stages after it, inside its operator (they may chain to it).
func (k kind) runsValues() bool {
	return k == kindMap || k == kindFilter || k == kindFlatMap || k == kindProcess || k.join()
}

// join reports whether a stage of kind k joins two keyed streams.
func (k kind) join() bool { return k == kindIntervalJoin || k == kindWindowJoin }

// terminal reports whether a stage of kind k ends a path of the pipeline.
func (k kind) terminal() bool { return k == kindTo || k == kindOutput }

// stage is the untyped part of a stage: its place in the graph, what
// Build decided about it, and the typed closures its constructor left.
type stage struct {
	p    *Pipeline
	name string
	kind kind
	in   *stage   // the stage before it; nil for From
	in2  *stage   // a join's right input (in is its left one)
	outs []*stage // the stages after it, in the order added
	opts options

	source sdk.Factory // From: the source operator, or nil
	// infallible: From's codec cannot fail to decode (codec.Bytes,
	// codec.String), so the stage after it may chain into the source.
	infallible bool
	sink       sdk.Factory // To: the sink operator
	stream     string      // From: the stream read; To, Output: the stream written (To's is set by Build)

	// head builds, for a new instance of the operator this stage starts,
	// the function taking each record of the stream it reads (the stream
	// in publishes). Every stage but From has one.
	head func(in *inst) func(sdk.Record) error
	// operator makes the factory of a stage that is an operator of its
	// own (Aggregate, Process) with the metadata Build planned.
	operator func(meta sdk.Metadata, output string) (sdk.Factory, error)

	// Set by Build.
	op        *plannedOp // the operator it runs in; nil for From and direct To/Output
	chained   bool       // called with Go values by in, in in's operator
	published string     // the stream its output goes to for the operators reading it
	targets   []string   // the streams its output is produced to, encoded
}

// plannedOp is an operator Build makes.
type plannedOp struct {
	first  *stage // the stage it starts with
	meta   sdk.Metadata
	source *stage // the FromSource whose operator it runs in (chainsIntoSource), or nil
}

// add appends a stage of kind k named name after in (nil for From) and
// checks what every stage needs; problems are kept for Build.
func (p *Pipeline) add(name string, k kind, in *stage, opts []Option) *stage {
	s := &stage{p: p, name: name, kind: k, in: in}
	for _, o := range opts {
		if o != nil {
			o(&s.opts)
		}
	}
	switch {
	case p.built:
		p.fail(s, ErrBuilt, "added after Build: build a new pipeline")
		return s
	case in != nil && in.p != p:
		p.fail(s, ErrInvalid, fmt.Sprintf("its input is a stage of pipeline %q", in.p.name))
		return s
	}
	if err := sdk.ValidName(name); err != nil {
		p.fail(s, ErrInvalid, "name: "+err.Error())
	} else if err := sdk.ValidName(p.name + "." + name); err != nil && p.err == nil {
		p.fail(s, ErrInvalid, "name: operator name "+err.Error())
	}
	if prev := p.byName[name]; prev != nil {
		if ks := [2]kind{prev.kind, k}; ks == [2]kind{kindFrom, kindOutput} || ks == [2]kind{kindOutput, kindFrom} {
			p.fail(s, ErrInvalid, fmt.Sprintf("stream %q is read by From and written by Output: a pipeline is not a cycle", name))
		}
		p.fail(s, ErrDuplicate, fmt.Sprintf("a %v stage is named %q already: name each stage once", prev.kind, name))
	}
	if prob := s.opts.problem(k); prob != "" {
		p.fail(s, ErrInvalid, prob)
	}
	p.byName[name] = s
	p.stages = append(p.stages, s)
	if in != nil {
		in.outs = append(in.outs, s)
	}
	return s
}

// fail keeps the first problem found, for Build.
func (p *Pipeline) fail(s *stage, err error, problem string) {
	if p.err == nil {
		p.err = &StageError{Pipeline: p.name, Stage: s.name, Problem: problem, Err: err}
	}
}

// require records a problem with s when ok is false: a missing function
// or codec.
func (s *stage) require(ok bool, what string) {
	if !ok {
		s.p.fail(s, ErrInvalid, what+" must not be nil")
	}
}

// Build checks the pipeline and compiles it into operators: one per chain
// of stages (see the package doc), each named "<pipeline>.<first stage>",
// plus the sources and sinks given to From and To as they are. Pass the
// factories to node.Run, node.Start or sdktest.NewGraph. It refuses an
// empty pipeline (ErrEmpty) and returns a *StageError naming the first bad
// stage: one whose output nobody takes (ErrUnconsumed), a name used twice
// (ErrDuplicate), a bad argument (ErrInvalid), or an operator whose
// metadata does not validate. Build compiles once: later calls return
// the same result, or, once a stage was added after it, that stage's
// *StageError (ErrBuilt); the factories returned before do not change.
func (p *Pipeline) Build() ([]sdk.Factory, error) {
	if !p.built {
		p.factories, p.buildErr = p.build()
		p.built = true
	} else if p.err != nil && p.buildErr == nil {
		return nil, p.err
	}
	return p.factories, p.buildErr
}

func (p *Pipeline) build() ([]sdk.Factory, error) {
	if p.err != nil {
		return nil, p.err
	}
	if len(p.stages) == 0 {
		return nil, fmt.Errorf("%w: %q: add stages with From, Map, …, Output", ErrEmpty, p.name)
	}
	for _, s := range p.stages {
		if !s.kind.terminal() && len(s.outs) == 0 {
			return nil, s.errorf(ErrUnconsumed, "its output goes nowhere: pass it to a later stage, To or Output")
		}
	}
	var ops []*plannedOp
	for _, s := range p.stages { // a stage's input comes before it
		switch s.kind {
		case kindFrom:
			if s.source != nil {
				meta := s.source().Metadata()
				if len(meta.Outputs) != 1 {
					return nil, s.errorf(ErrInvalid, fmt.Sprintf("source operator %q has %d outputs (%v): From takes a source with one", meta.Name, len(meta.Outputs), meta.Outputs))
				}
				s.stream = meta.Outputs[0]
			}
		case kindAggregate, kindProcess, kindIntervalJoin, kindWindowJoin:
			ops = append(ops, p.startOp(s))
		case kindTo, kindOutput:
			if s.kind == kindTo {
				meta := s.sink().Metadata()
				if len(meta.Inputs) != 1 {
					return nil, s.errorf(ErrInvalid, fmt.Sprintf("sink operator %q has %d inputs (%v): To takes a sink with one", meta.Name, len(meta.Inputs), meta.Inputs))
				}
				s.stream = meta.Inputs[0].Stream
			}
			switch in := s.in; {
			case in.kind == kindKeyBy || p.chains(s):
				s.chained, s.op = true, in.op
				in.targets = append(in.targets, s.stream)
				in.op.addOutput(s.stream)
			case in.kind == kindAggregate && len(in.outs) == 1:
				in.published = s.stream // the window operator writes it: no operator between
			default:
				op := p.startOp(s)
				op.addOutput(s.stream)
				ops = append(ops, op)
			}
		default: // Map, Filter, FlatMap, KeyBy
			switch {
			case p.chains(s):
				s.chained, s.op = true, s.in.op
			case p.chainsIntoSource(s):
				ops = append(ops, p.startSourceOp(s))
			default:
				ops = append(ops, p.startOp(s))
			}
		}
	}
	var foreign []*stage // FromSource and To stages, whose operators are given as they are
	for _, s := range p.stages {
		if s.kind == kindTo || s.kind == kindFrom && s.source != nil && !s.chained {
			foreign = append(foreign, s)
		}
	}
	return p.factoriesOf(ops, foreign)
}

// startSourceOp plans the operator that starts with s and runs in the
// operator of the source s reads (chainsIntoSource): the source's
// metadata, writing what the chain writes.
func (p *Pipeline) startSourceOp(s *stage) *plannedOp {
	meta := s.in.source().Metadata()
	meta.Outputs = nil
	op := &plannedOp{first: s, meta: meta, source: s.in}
	s.in.chained = true // its factory is the chain's now
	s.op = op
	return op
}

// chains reports whether s runs in the operator of the stage before it:
// that one hands on Go values, and s sets no option (parallelism, key
// groups, restart policy) that operator has otherwise, nor Unchained.
func (p *Pipeline) chains(s *stage) bool {
	if !s.in.kind.runsValues() || s.opts.unchained {
		return false
	}
	m := s.in.op.meta.WithDefaults()
	o := s.opts
	return (o.parallelism == 0 || o.parallelism == m.Parallelism) &&
		(o.keyGroups == 0 || o.keyGroups == m.KeyGroups) &&
		(o.restart == nil || o.restart.WithDefaults() == m.Restart)
}

// startOp plans the operator that starts with s, reading what the stage
// before it publishes.
func (p *Pipeline) startOp(s *stage) *plannedOp {
	op := &plannedOp{first: s, meta: sdk.Metadata{
		Name:        p.name + "." + s.name,
		Inputs:      []sdk.Input{s.in.publish()},
		Parallelism: s.opts.parallelism,
		KeyGroups:   s.opts.keyGroups,
	}}
	if s.in2 != nil { // a join's right input
		op.meta.Inputs = append(op.meta.Inputs, s.in2.publish())
	}
	if s.opts.restart != nil {
		op.meta.Restart = *s.opts.restart
	}
	s.op = op
	return op
}

// publish returns the input of an operator reading s's output: the
// stream s reads from outside or writes, "<pipeline>.<stage>" unless
// named otherwise, which s's operator then produces to; group-by after
// KeyBy, else shuffle.
func (s *stage) publish() sdk.Input {
	if s.kind == kindFrom {
		return sdk.Input{Stream: s.stream, Routing: sdk.Shuffle}
	}
	if s.published == "" {
		s.published = s.p.name + "." + s.name
		if s.kind != kindAggregate { // the window operator writes its own
			s.targets = append(s.targets, s.published)
			s.op.addOutput(s.published)
		}
	}
	if s.kind == kindKeyBy {
		return sdk.Input{Stream: s.published, Routing: sdk.GroupBy}
	}
	return sdk.Input{Stream: s.published, Routing: sdk.Shuffle}
}

// addOutput declares stream an output of op, once.
func (op *plannedOp) addOutput(stream string) {
	for _, o := range op.meta.Outputs {
		if o == stream {
			return
		}
	}
	op.meta.Outputs = append(op.meta.Outputs, stream)
}

// errorf returns the *StageError of s.
func (s *stage) errorf(err error, problem string) *StageError {
	return &StageError{Pipeline: s.p.name, Stage: s.name, Problem: problem, Err: err}
}

// factoriesOf makes the factories of the given sources and sinks (the
// stages in foreign), then of the planned operators, and checks names:
// operators, and the streams the pipeline writes, once each.
func (p *Pipeline) factoriesOf(ops []*plannedOp, foreign []*stage) ([]sdk.Factory, error) {
	var out []sdk.Factory
	names := map[string]*stage{}
	for _, s := range foreign {
		f := s.source
		if s.kind == kindTo {
			f = s.sink
		}
		name := f().Metadata().Name
		if prev := names[name]; prev != nil {
			return nil, s.errorf(ErrDuplicate, fmt.Sprintf("its operator is named %q, as stage %q's is", name, prev.name))
		}
		names[name] = s
		out = append(out, f)
	}
	written := map[string]*stage{}
	for _, s := range p.stages {
		ts := s.targets
		if s.kind == kindAggregate {
			ts = []string{s.published} // the window operator writes it
		}
		for _, t := range ts {
			if w := written[t]; w != nil && w != s {
				return nil, s.errorf(ErrDuplicate, fmt.Sprintf("writes stream %q, which stage %q writes too", t, w.name))
			}
			written[t] = s
		}
	}
	for _, s := range p.stages {
		if s.kind == kindFrom && written[s.stream] != nil {
			return nil, s.errorf(ErrInvalid, fmt.Sprintf("reads stream %q, which stage %q writes: a pipeline is not a cycle", s.stream, written[s.stream].name))
		}
	}
	for _, op := range ops {
		s := op.first
		if prev := names[op.meta.Name]; prev != nil {
			return nil, s.errorf(ErrDuplicate, fmt.Sprintf("its operator %q is named as stage %q's", op.meta.Name, prev.name))
		}
		names[op.meta.Name] = s
		if err := op.meta.WithDefaults().Validate(); err != nil {
			return nil, s.errorf(err, err.Error())
		}
		f, err := op.factory()
		if err != nil {
			return nil, s.errorf(err, err.Error())
		}
		out = append(out, f)
	}
	return out, nil
}

// factory returns the factory of op: the stage's own operator (Aggregate,
// Process), or one running the chain that starts with op.first.
func (op *plannedOp) factory() (sdk.Factory, error) {
	s, meta := op.first, op.meta
	if s.operator != nil {
		return s.operator(meta, s.published)
	}
	if op.source != nil {
		return op.sourceFactory(op.source), nil
	}
	return func() sdk.Operator {
		in := &inst{op: meta.Name}
		return &chainOp{meta: meta, in: in, handle: s.head(in)}
	}, nil
}
