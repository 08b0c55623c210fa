package pmi

import (
	"fmt"
	"strconv"
	"strings"
)

// ProcessMappingKey is the key under which a process manager publishes which ranks share a
// node: PMI-1 get, PMI-2 info-getjobattr.
const ProcessMappingKey = "PMI_process_mapping"

// maxMappingNumber bounds each number of a mapping, far above any job, so that a garbled
// value cannot make the parser allocate without limit.
const maxMappingNumber = 1 << 24

// mappingBlock is one (start_node, node_count, ranks_per_node) triple.
type mappingBlock struct{ start, count, ppn int }

// ParseProcessMapping parses a PMI_process_mapping value such as "(vector,(0,4,1))" or
// "(vector,(0,2,2),(1,1,3))" into the node index of each of size ranks. Each block
// (start, count, ppn) gives the next ranks in order: ppn ranks on node start, ppn on
// start+1, and so on for count nodes. A vector that lists fewer ranks than size repeats
// from its first block, as MPICH reads it (a cyclic placement); one that lists more is an
// error, and so are a ppn or count of 0. Node indices are renumbered 0, 1, ... in order of
// first appearance; only equality means anything. An empty value (RFC 13: the mapping is
// unknown) returns nil, nil. Spaces around the numbers and commas are allowed.
func ParseProcessMapping(v string, size int) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	if size < 1 || size > maxMappingNumber {
		return nil, fmt.Errorf("pmi: %s for a job of %d ranks: want 1..%d ranks", ProcessMappingKey, size, maxMappingNumber)
	}
	blocks, err := parseMappingBlocks(v)
	if err != nil {
		return nil, fmt.Errorf("pmi: %s=%q: %w", ProcessMappingKey, Truncate(v), err)
	}
	listed := 0
	for _, b := range blocks {
		listed += b.count * b.ppn
		if listed > size {
			return nil, fmt.Errorf("pmi: %s=%q places more ranks than the job's %d (is PMI_SIZE short?)", ProcessMappingKey, Truncate(v), size)
		}
	}
	nodes := make([]int, 0, size)
	dense := map[int]int{}
	for len(nodes) < size {
		for _, b := range blocks {
			for n := b.start; n < b.start+b.count && len(nodes) < size; n++ {
				id, ok := dense[n]
				if !ok {
					id = len(dense)
					dense[n] = id
				}
				for j := 0; j < b.ppn && len(nodes) < size; j++ {
					nodes = append(nodes, id)
				}
			}
		}
	}
	return nodes, nil
}

// parseMappingBlocks parses "(vector,(a,b,c),...)" into its blocks.
func parseMappingBlocks(v string) ([]mappingBlock, error) {
	p := mappingParser{s: v}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	if err := p.expect("vector"); err != nil {
		return nil, err
	}
	var blocks []mappingBlock
	for {
		p.space()
		if p.peek() == ')' {
			break
		}
		if p.peek() != ',' {
			return nil, fmt.Errorf(`want "," or ")" at offset %d`, p.i)
		}
		p.i++
		b, err := p.block()
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if p.space(); p.i != len(p.s) {
		return nil, fmt.Errorf("trailing %q after the vector", Truncate(p.s[p.i:]))
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("a vector without blocks")
	}
	return blocks, nil
}

type mappingParser struct {
	s string
	i int
}

func (p *mappingParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *mappingParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *mappingParser) expect(tok string) error {
	p.space()
	if !strings.HasPrefix(p.s[p.i:], tok) {
		return fmt.Errorf("want %q at offset %d", tok, p.i)
	}
	p.i += len(tok)
	return nil
}

func (p *mappingParser) number(min int) (int, error) {
	p.space()
	j := p.i
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j++
	}
	if j == p.i || j-p.i > 8 {
		return 0, fmt.Errorf("want a number at offset %d", p.i)
	}
	n, _ := strconv.Atoi(p.s[p.i:j])
	if n < min || n > maxMappingNumber {
		return 0, fmt.Errorf("number %d at offset %d is outside %d..%d", n, p.i, min, maxMappingNumber)
	}
	p.i = j
	return n, nil
}

// block parses "(start,count,ppn)".
func (p *mappingParser) block() (mappingBlock, error) {
	var b mappingBlock
	var err error
	if err = p.expect("("); err != nil {
		return b, err
	}
	if b.start, err = p.number(0); err != nil {
		return b, err
	}
	if err = p.expect(","); err != nil {
		return b, err
	}
	if b.count, err = p.number(1); err != nil {
		return b, err
	}
	if err = p.expect(","); err != nil {
		return b, err
	}
	if b.ppn, err = p.number(1); err != nil {
		return b, err
	}
	return b, p.expect(")")
}

// FormatProcessMapping formats the node index of each rank as a PMI_process_mapping value,
// in as few blocks as a greedy pass finds: a block placement "(vector,(0,2,2))", a cyclic
// one "(vector,(0,2,1),(0,2,1))". ParseProcessMapping(FormatProcessMapping(t), len(t))
// returns t when t numbers its nodes 0, 1, ... in order of first appearance (as an agent's
// roster does). It returns "" for no ranks.
func FormatProcessMapping(nodeOfRank []int) string {
	if len(nodeOfRank) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("(vector")
	for i := 0; i < len(nodeOfRank); {
		blk, next := nextBlock(nodeOfRank, i)
		fmt.Fprintf(&b, ",(%d,%d,%d)", blk.start, blk.count, blk.ppn)
		i = next
	}
	b.WriteString(")")
	return b.String()
}

// nextBlock returns the longest block starting at rank i: runs of equal length on
// consecutive nodes.
func nextBlock(t []int, i int) (mappingBlock, int) {
	run := func(at int) int {
		n := at
		for n < len(t) && t[n] == t[at] {
			n++
		}
		return n - at
	}
	blk := mappingBlock{start: t[i], count: 1, ppn: run(i)}
	next := i + blk.ppn
	for next < len(t) && t[next] == blk.start+blk.count && run(next) >= blk.ppn {
		next += blk.ppn
		blk.count++
	}
	return blk, next
}
