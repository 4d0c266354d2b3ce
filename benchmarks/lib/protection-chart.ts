// The many-routers chart: premium's p95 change against rr (y) by the number of routers N (log x),
// one line per strategy and view, each point with its 95 % interval, one panel per experiment.
// A plain SVG string: no chart library, nothing to load to view it.

interface ChartPoint {
  n: number;
  value: number | null;
  lo: number | null;
  hi: number | null;
}

interface ChartLine {
  label: string;
  points: ChartPoint[];
}

export interface ChartPanel {
  title: string;
  lines: ChartLine[];
}

const COLOURS = ['#1b6ca8', '#3fa34d', '#d1495b', '#8e6c8a', '#edae49', '#00798c', '#555555'];
const W = 420;
const H = 300;
const M = { left: 56, right: 12, top: 28, bottom: 40 };

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function panel(p: ChartPanel, x0: number, ns: readonly number[], yMin: number, yMax: number): string {
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const lx = (n: number): number => {
    const a = Math.log(ns[0] as number);
    const b = Math.log(ns[ns.length - 1] as number);
    return x0 + M.left + (b === a ? pw / 2 : ((Math.log(n) - a) / (b - a)) * pw);
  };
  const ly = (v: number): number => M.top + ((yMax - v) / (yMax - yMin)) * ph;
  const out: string[] = [];
  out.push(`<text x="${x0 + W / 2}" y="16" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`);
  out.push(`<rect x="${x0 + M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  const step = niceStep((yMax - yMin) / 6);
  for (let v = Math.ceil(yMin / step) * step; v <= yMax + 1e-9; v += step) {
    const y = ly(v).toFixed(1);
    out.push(
      `<line x1="${x0 + M.left}" x2="${x0 + M.left + pw}" y1="${y}" y2="${y}" stroke="${Math.abs(v) < 1e-9 ? '#000' : '#e4e4e4'}"/>`,
    );
    out.push(`<text x="${x0 + M.left - 4}" y="${y}" text-anchor="end" dy="4">${Math.round(v)}%</text>`);
  }
  for (const n of ns)
    out.push(`<text x="${lx(n).toFixed(1)}" y="${M.top + ph + 16}" text-anchor="middle">${n}</text>`);
  out.push(
    `<text x="${x0 + M.left + pw / 2}" y="${H - 6}" text-anchor="middle">routers N (log scale)</text>`,
  );
  p.lines.forEach((line, i) => {
    const c = COLOURS[i % COLOURS.length] as string;
    // Lines side by side at each N, so the interval bars do not hide each other.
    const dx = (i - (p.lines.length - 1) / 2) * 4;
    const pts = line.points.filter((q) => q.value !== null);
    const path = pts.map((q) => `${(lx(q.n) + dx).toFixed(1)},${ly(q.value as number).toFixed(1)}`);
    if (path.length > 1)
      out.push(`<polyline points="${path.join(' ')}" fill="none" stroke="${c}" stroke-width="1.5"/>`);
    for (const q of pts) {
      const x = (lx(q.n) + dx).toFixed(1);
      if (q.lo !== null && q.hi !== null)
        out.push(
          `<line x1="${x}" x2="${x}" y1="${ly(q.lo).toFixed(1)}" y2="${ly(q.hi).toFixed(1)}" stroke="${c}"/>`,
        );
      out.push(`<circle cx="${x}" cy="${ly(q.value as number).toFixed(1)}" r="2.5" fill="${c}"/>`);
    }
  });
  return out.join('\n');
}

function niceStep(raw: number): number {
  const p = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** The SVG of the panels side by side, a shared y range and one legend. */
export function protectionChart(panels: readonly ChartPanel[], note: string): string {
  const ns = [...new Set(panels.flatMap((p) => p.lines.flatMap((l) => l.points.map((q) => q.n))))].sort(
    (a, b) => a - b,
  );
  const ys = panels.flatMap((p) => p.lines.flatMap((l) => l.points.flatMap((q) => [q.value, q.lo, q.hi])));
  const finite = ys.filter((v): v is number => v !== null && Number.isFinite(v));
  const yMin = Math.min(0, ...finite) - 5;
  const yMax = Math.max(0, ...finite) + 5;
  const labels = panels[0]?.lines.map((l) => l.label) ?? [];
  const legendH = 18 * labels.length + 30;
  const width = W * panels.length;
  const body = panels.map((p, i) => panel(p, i * W, ns, yMin, yMax));
  const legend = labels.map((l, i) => {
    const y = H + 18 * i + 14;
    const c = COLOURS[i % COLOURS.length] as string;
    return `<line x1="${M.left}" x2="${M.left + 20}" y1="${y}" y2="${y}" stroke="${c}" stroke-width="2"/><text x="${M.left + 26}" y="${y + 4}">${esc(l)}</text>`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + legendH}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...body,
    ...legend,
    `<text x="${M.left}" y="${H + legendH - 8}" fill="#555">${esc(note)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
