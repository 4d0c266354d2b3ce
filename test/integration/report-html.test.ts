import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeReports } from '../../src/report/report.js';

const CHROMIUM = '/usr/bin/chromium';
const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const haveChromium = existsSync(CHROMIUM);

// On CI a missing browser is a failure; on a workstation the suite is skipped.
if (!haveChromium && process.env.CI === 'true') {
  describe('report.html in Chromium', () => {
    it('needs /usr/bin/chromium on CI', () => {
      expect.fail(`${CHROMIUM} is missing (apt-get install chromium)`);
    });
  });
}

describe.skipIf(!haveChromium)('report.html in Chromium', () => {
  let dir: string;
  let browser: Browser;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plb-report-html-'));
    cpSync(FIXTURES, join(dir, 'runs'), { recursive: true });
    await writeReports([join(dir, 'runs')], { format: 'table' });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function open(file: string, shot: string) {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => {
      if (!r.url().startsWith('file:')) requests.push(r.url());
    });
    await page.goto(pathToFileURL(file).href);
    const charts = await page.locator('.chart svg').count();
    // marks vega drew: bars/rects, lines, rules, inside each chart's mark groups
    const marks = await page.locator('.chart svg g[class^="mark-"] > *').count();
    const perChart = await page
      .locator('.chart svg')
      .evaluateAll((svgs) =>
        svgs.map((s) => s.querySelectorAll('g[class^="mark-"] > path, g[class^="mark-"] > line').length),
      );
    const tables = await page.locator('table').count();
    const size = await page.locator('.chart svg').first().boundingBox();
    await page.screenshot({ path: shot, fullPage: true });
    await page.close();
    return { errors, requests, charts, marks, perChart, tables, size };
  }

  it('renders the run report: charts with marks, tables, nothing fetched', async () => {
    const file = join(dir, 'runs', 'demo-cascade-plb-1', 'report.html');
    const html = readFileSync(file, 'utf8');
    expect(html).not.toMatch(/<script|<link|src="http|href="http/);
    const shot = join(tmpdir(), 'plb-report-run.png');
    const r = await open(file, shot);
    console.log(`screenshot: ${shot}`);
    expect(r.errors).toEqual([]);
    expect(r.requests).toEqual([]);
    // p95 and goodput over time, p95 and goodput per phase, CPU over time, roles over time, the
    // balance signals' spreads over time (no lag chart: the fixture ran without writes)
    expect(r.charts).toBe(7);
    expect(r.perChart.every((n) => n > 0)).toBe(true);
    expect(r.marks).toBeGreaterThan(50);
    // phase, replica, detection + the intervals table
    expect(r.tables).toBe(4);
    expect(r.size?.width).toBeGreaterThan(500);
  });

  it('renders the comparison page of the nine runs', async () => {
    const file = join(dir, 'runs', 'comparison.html');
    const shot = join(tmpdir(), 'plb-report-comparison.png');
    const r = await open(file, shot);
    console.log(`screenshot: ${shot}`);
    expect(r.errors).toEqual([]);
    expect(r.requests).toEqual([]);
    // the change vs rr, p95 and goodput per phase with IQR bars
    expect(r.charts).toBe(3);
    expect(r.perChart.every((n) => n > 0)).toBe(true);
    // comparison table + verdicts + 3 groups x (phase, replica, detection, intervals)
    expect(r.tables).toBe(14);
  });
});
