package plan

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxBoxesPerRow keeps the diagram within a terminal: wider clusters wrap.
const maxBoxesPerRow = 4

// Diagram draws the topology like the guide's: the workstation, the
// control plane on top, the workers below with OS, address and role, and
// the overlay that joins them.
func (p *Plan) Diagram() string {
	var cps, workers []Node
	for _, n := range p.Nodes {
		if n.IsControlPlane() {
			cps = append(cps, n)
		} else {
			workers = append(workers, n)
		}
	}
	var out []string

	cpBoxes := make([]box, 0, len(cps))
	for _, n := range cps {
		lines := []string{"etcd, kube-apiserver, scheduler, controller-manager"}
		if len(cps) > 1 { // keep side-by-side boxes narrow
			lines = []string{"etcd, kube-apiserver,", "scheduler, controller-manager"}
		}
		lines = append(lines, "API name: "+p.APIServer.Host)
		cpBoxes = append(cpBoxes, box{title: n.Name + " " + n.Address, lines: lines})
	}
	wBoxes := make([]box, 0, len(workers))
	for _, n := range workers {
		osLine := "Linux"
		if n.IsWindows() {
			osLine = n.WindowsRelease
			if osLine == "" {
				osLine = "Windows"
			}
		}
		lines := []string{osLine, fmt.Sprintf("max pods %d", n.MaxPods)}
		if n.IsWindows() {
			lines = append(lines, "taint os=windows")
			if n.RuntimeClass != "" {
				lines = append(lines, "RuntimeClass "+n.RuntimeClass)
			}
		} else {
			lines = append(lines, "worker")
		}
		wBoxes = append(wBoxes, box{title: n.Name + " " + shortAddr(n.Address), lines: lines})
	}

	// Center the narrower of the two first rows under the wider one.
	cpRows := layoutRows(cpBoxes, 1)
	wRows := layoutRows(wBoxes, 1)
	if len(cpRows) > 0 && len(wRows) > 0 {
		cw, ww := cpRows[0].total(), wRows[0].total()
		if cw < ww {
			setIndent(cpRows, 1+(ww-cw)/2)
		} else {
			setIndent(wRows, 1+(cw-ww)/2)
		}
	}
	top := rowCenter(cpRows)
	ws := fmt.Sprintf("workstation: kubectl, context %s", p.Cluster)
	out = append(out, centerAt(ws, top))
	out = append(out, strings.Repeat(" ", top)+"│ "+fmt.Sprint(p.APIServer.Port))
	out = append(out, strings.Repeat(" ", top)+"▼")
	for i, r := range cpRows {
		last := i == len(cpRows)-1
		out = append(out, r.render(last && len(workers) > 0)...)
	}
	for _, r := range wRows {
		out = append(out, r.bus(top)...)
		out = append(out, r.render(false)...)
		top = -1 // later rows hang off the same bus
	}
	if p.VXLAN.Enabled {
		out = append(out, fmt.Sprintf("  between all nodes — VXLAN: UDP %d, VNI %d, pod MTU %d", p.VXLAN.Port, p.VXLAN.VNI, p.VXLAN.PodMTU))
	} else {
		out = append(out, fmt.Sprintf("  between nodes — %s, pod MTU %d", p.Calico.Encapsulation, p.VXLAN.PodMTU))
	}
	for i := range out {
		out[i] = strings.TrimRight(out[i], " ")
	}
	return strings.Join(out, "\n") + "\n"
}

// shortAddr abbreviates an address to its last octet, as the guide does.
func shortAddr(a string) string {
	if i := strings.LastIndex(a, "."); i >= 0 {
		return a[i:]
	}
	return a
}

type box struct {
	title string
	lines []string
}

func (b box) width() int {
	w := utf8.RuneCountInString(b.title) + 6
	for _, l := range b.lines {
		w = max(w, utf8.RuneCountInString(l)+4)
	}
	return w
}

type row struct {
	boxes  []box
	width  int // every box in a row has the same width
	indent int
}

// total is the row's width in columns, without its indent.
func (r row) total() int { return len(r.boxes)*(r.width+1) - 1 }

func setIndent(rows []row, indent int) {
	for i := range rows {
		rows[i].indent = indent
	}
}

func (r row) center(i int) int { return r.indent + i*(r.width+1) + r.width/2 }

func layoutRows(boxes []box, indent int) []row {
	w := 0
	for _, b := range boxes {
		w = max(w, b.width())
	}
	var rows []row
	for i := 0; i < len(boxes); i += maxBoxesPerRow {
		end := min(i+maxBoxesPerRow, len(boxes))
		rows = append(rows, row{boxes: boxes[i:end], width: w, indent: indent})
	}
	return rows
}

func rowCenter(rows []row) int {
	if len(rows) == 0 {
		return 20
	}
	r := rows[0]
	return r.indent + (len(r.boxes)*(r.width+1)-1)/2
}

func centerAt(s string, col int) string {
	pad := col - utf8.RuneCountInString(s)/2
	if pad < 0 {
		pad = 0
	}
	return strings.Repeat(" ", pad) + s
}

// render draws the row's boxes; with down set, the bottom border of the
// row's middle gets a ┬ where the connector to the workers leaves.
func (r row) render(down bool) []string {
	height := 0
	for _, b := range r.boxes {
		height = max(height, len(b.lines))
	}
	lines := make([][]rune, height+2)
	for i := range lines {
		lines[i] = []rune(strings.Repeat(" ", r.indent))
	}
	for bi, b := range r.boxes {
		if bi > 0 {
			for i := range lines {
				lines[i] = append(lines[i], ' ')
			}
		}
		title := "─ " + b.title + " "
		top := "┌" + title + strings.Repeat("─", r.width-2-utf8.RuneCountInString(title)) + "┐"
		lines[0] = append(lines[0], []rune(top)...)
		for i := 0; i < height; i++ {
			text := ""
			if i < len(b.lines) {
				text = b.lines[i]
			}
			body := "│ " + text + strings.Repeat(" ", r.width-4-utf8.RuneCountInString(text)) + " │"
			lines[i+1] = append(lines[i+1], []rune(body)...)
		}
		lines[height+1] = append(lines[height+1], []rune("└"+strings.Repeat("─", r.width-2)+"┘")...)
	}
	if down {
		bottom := lines[height+1]
		c := r.indent + (len(r.boxes)*(r.width+1)-1)/2
		if c < len(bottom) && bottom[c] == '─' {
			bottom[c] = '┬'
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}

// bus draws the line that fans out from the column `from` (or from the
// left edge when from < 0) to an arrow above every box of the row.
func (r row) bus(from int) []string {
	first, last := r.center(0), r.center(len(r.boxes)-1)
	lo, hi := first, last
	if from >= 0 {
		lo, hi = min(lo, from), max(hi, from)
	}
	line := []rune(strings.Repeat(" ", hi+1))
	for c := lo; c <= hi; c++ {
		line[c] = '─'
	}
	for i := range r.boxes {
		line[r.center(i)] = '┬'
	}
	line[first] = '┌'
	if len(r.boxes) == 1 {
		line[first] = '│'
	}
	if len(r.boxes) > 1 {
		line[last] = '┐'
	}
	if from >= 0 {
		switch {
		case from == first && len(r.boxes) == 1:
			line[from] = '│'
		case from == first:
			line[from] = '├'
		case from == last:
			line[from] = '┤'
		case from < first:
			line[from] = '└'
		case from > last:
			line[from] = '┘'
		case line[from] == '┬':
			line[from] = '┼'
		default:
			line[from] = '┴'
		}
	}
	arrows := []rune(strings.Repeat(" ", hi+1))
	for i := range r.boxes {
		arrows[r.center(i)] = '▼'
	}
	return []string{string(line), string(arrows)}
}
