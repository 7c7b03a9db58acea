// WebKit (WebKitGTK's MiniBrowser, the engine of Safari) for the browser tests, driven over
// W3C WebDriver (classic) by Debian's WebKitWebDriver through selenium-webdriver, on an Xvfb
// display of its own. One helper does the whole launch and teardown:
//   const webkit = await launchWebKit();      // Xvfb, WebKitWebDriver, one session
//   const page = webkit.page;                 // a small Playwright-like page (below)
//   await page.goto(url); await page.evaluate((a) => ..., arg);
//   webkit.downloads                          // the folder MiniBrowser saves downloads to
//   webkit.processes()                        // [{ pid, name, rss }] of MiniBrowser's tree
//   await webkit.close();                     // session, driver, browser, display, temp dirs
// The page object has the methods lib/demo-browser.mjs's helpers use (evaluate,
// waitForFunction, waitForSelector, goto, setInputFiles, screenshot, ...), so waitState,
// textOf, dropFiles, openDemo and screenshot work on a WebKit page as on a Chromium one.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Builder, By, Key } from 'selenium-webdriver';
import { rssOf, processTree } from './child.mjs';
import { skipUnless } from './tools.mjs';

export const WEBKIT_DRIVER = process.env.HTTPIPE_WEBKIT_DRIVER || '/usr/bin/WebKitWebDriver';
export const MINIBROWSER = process.env.HTTPIPE_MINIBROWSER || '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
export const XVFB = process.env.HTTPIPE_XVFB || '/usr/bin/Xvfb';

/** `false` when WebKit can run here, else the skip reason (see lib/tools.mjs: without the tools a test fails). */
export function skipWithoutWebKit() {
  return skipUnless(WEBKIT_DRIVER, 'WebKitWebDriver (webkit2gtk-driver)')
    || skipUnless(MINIBROWSER, 'MiniBrowser (libwebkit2gtk-4.1-0)') || skipUnless(XVFB, 'Xvfb (xvfb)');
}

/**
 * Children still running, killed with what they started (MiniBrowser's processes) if this
 * process exits without close() (a test that crashed).
 */
const live = new Set();
process.on('exit', () => {
  for (const proc of live) {
    for (const p of processTree(proc.pid)) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
  }
});

function spawnTracked(cmd, args, opts) {
  const proc = spawn(cmd, args, opts);
  live.add(proc);
  proc.on('exit', () => live.delete(proc));
  let err = '';
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (d) => { err = (err + d).slice(-4000); });
  proc.output = () => err;
  return proc;
}

/** Stops `proc` (TERM, then KILL after 3 s) and resolves once it exited. */
function stop(proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
    setTimeout(() => proc.kill('SIGKILL'), 3000).unref();
  });
}

/** An X display of its own: Xvfb picks a free display number and writes it to fd 3. */
async function startXvfb() {
  const proc = spawnTracked(XVFB, ['-displayfd', '3', '-screen', '0', '1920x4000x24', '-nolisten', 'tcp'],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  const display = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`Xvfb gave no display in 15 s: ${proc.output()}`)), 15000);
    proc.stdio[3].setEncoding('utf8');
    proc.stdio[3].on('data', (d) => {
      out += d;
      if (out.includes('\n')) { clearTimeout(timer); resolve(`:${out.trim()}`); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`Xvfb exited (${code}): ${proc.output()}`)); });
  });
  return { proc, display };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** WebKitWebDriver on a free port, answering /status (tries another port if one was taken). */
async function startDriver(env) {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const proc = spawnTracked(WEBKIT_DRIVER, [`--port=${port}`, '--host=127.0.0.1'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100 && proc.exitCode === null; i++) {
      const ok = await fetch(`${url}/status`).then((r) => r.ok, () => false);
      if (ok) return { proc, url };
      await new Promise((r) => setTimeout(r, 100));
    }
    await stop(proc);
    if (attempt === 3) throw new Error(`WebKitWebDriver did not start: ${proc.output()}`);
  }
}

/**
 * Xvfb, WebKitWebDriver and one MiniBrowser session with an empty profile (HOME and the XDG
 * folders in a temp dir; downloads go to `downloads`). Whatever started is stopped again if a
 * later step fails. `width`×`height`: the page's viewport (innerWidth × innerHeight).
 */
export async function launchWebKit({ width = 1280, height = 900 } = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'httpipe-webkit-'));
  const downloads = path.join(home, 'Downloads');
  const xdg = { XDG_CONFIG_HOME: 'config', XDG_CACHE_HOME: 'cache', XDG_DATA_HOME: 'data', XDG_RUNTIME_DIR: 'run' };
  for (const [k, v] of Object.entries(xdg)) { xdg[k] = path.join(home, v); fs.mkdirSync(xdg[k], { mode: 0o700 }); }
  fs.mkdirSync(downloads);
  fs.writeFileSync(path.join(xdg.XDG_CONFIG_HOME, 'user-dirs.dirs'), `XDG_DOWNLOAD_DIR="${downloads}"\n`);
  fs.mkdirSync(path.join(xdg.XDG_CONFIG_HOME, 'gtk-3.0'));
  fs.writeFileSync(path.join(xdg.XDG_CONFIG_HOME, 'gtk-3.0', 'gtk.css'), GTK_CSS);
  let xvfb; let driverProc; let driver;
  const close = async () => {
    const tree = driverProc ? processTree(driverProc.pid).filter((p) => p.pid !== driverProc.pid) : [];
    await driver?.quit().catch(() => {});
    await stop(driverProc);
    // MiniBrowser and its WebKit processes outlive a driver that was killed: by pid, then gone
    for (const p of tree) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* exited */ } }
    for (let i = 0; i < 50 && tree.some((p) => fs.existsSync(`/proc/${p.pid}`)); i++) await new Promise((r) => setTimeout(r, 100));
    await stop(xvfb?.proc);
    fs.rmSync(home, { recursive: true, force: true, maxRetries: 3 });
  };
  try {
    xvfb = await startXvfb();
    const env = { ...process.env, ...xdg, HOME: home, DISPLAY: xvfb.display, WAYLAND_DISPLAY: '', NO_AT_BRIDGE: '1' };
    const started = await startDriver(env);
    driverProc = started.proc;
    driver = await new Builder().usingServer(started.url).withCapabilities({
      browserName: 'MiniBrowser',
      acceptInsecureCerts: true,
      'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
    }).build();
    await driver.manage().setTimeouts({ script: 600_000, pageLoad: 60_000 });
    const page = new WebKitPage(driver);
    await page.setViewportSize({ width, height });
    return {
      driver,
      page,
      display: xvfb.display,
      downloads,
      /** MiniBrowser and its WebKit processes (web content, network): { pid, name, rss } each. */
      processes() {
        return processTree(driverProc.pid).filter((p) => p.pid !== driverProc.pid).map((p) => ({ ...p, rss: rssOf(p.pid) }));
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

// MiniBrowser's toolbar keeps its window at least 447 px wide; a phone's viewport is 390 px.
// This user style for GTK (the browser's own widgets, not the page: WebKit draws the page's
// controls itself) shrinks the toolbar to a few pixels.
const GTK_CSS = `* { font-size: 1px; min-width: 0; min-height: 0; padding: 0; margin: 0; border-width: 0; -gtk-icon-transform: scale(0.2); }
entry { min-width: 0; }
`;

const source = (fn) => (typeof fn === 'function' ? fn.toString() : `() => (${fn})`);

/**
 * A WebKit window with the part of Playwright's Page that the tests use. Scripts run through
 * WebDriver's Execute Script, which waits for a returned promise (the script timeout is
 * 10 minutes); arguments and results are JSON-like.
 */
export class WebKitPage {
  constructor(driver) {
    this.driver = driver;
  }

  async goto(url) {
    await this.driver.get(url);
  }

  /** Runs `fn(arg)` in the page; resolves with its (awaited) result. */
  async evaluate(fn, arg) {
    return this.driver.executeScript(`return (${source(fn)})(arguments[0]);`, arg);
  }

  /** Polls `fn(arg)` in the page until truthy; rejects after `timeout` ms. */
  async waitForFunction(fn, arg, { timeout = 30000, polling = 100 } = {}) {
    const end = performance.now() + timeout;
    for (;;) {
      const v = await this.evaluate(fn, arg);
      if (v) return v;
      if (performance.now() > end) throw new Error(`waitForFunction timed out after ${timeout} ms: ${source(fn)}`);
      await new Promise((r) => setTimeout(r, polling));
    }
  }

  async waitForSelector(selector, { timeout = 30000 } = {}) {
    await this.waitForFunction((s) => !!document.querySelector(s), selector, { timeout });
  }

  async click(selector) {
    await (await this.driver.findElement(By.css(selector))).click();
  }

  /** Replaces the value of an input by typing `text` (as a person would). */
  async fill(selector, text) {
    const el = await this.driver.findElement(By.css(selector));
    await el.clear();
    await el.sendKeys(text);
  }

  async press(selector, key) {
    await (await this.driver.findElement(By.css(selector))).sendKeys(Key[key.toUpperCase()] ?? key);
  }

  async inputValue(selector) {
    return this.evaluate((s) => document.querySelector(s).value, selector);
  }

  async isVisible(selector) {
    return this.evaluate((s) => {
      const el = document.querySelector(s);
      return !!el && !el.closest('[hidden]') && el.getClientRects().length > 0;
    }, selector);
  }

  /** Gives an <input type=file> these files from disk (WebDriver: one path a line). */
  async setInputFiles(selector, files) {
    await (await this.driver.findElement(By.css(selector))).sendKeys([].concat(files).join('\n'));
  }

  /** Sizes the window so that the page's viewport is `width`×`height` CSS pixels. */
  async setViewportSize({ width, height }) {
    const win = this.driver.manage().window();
    for (let i = 0; i < 3; i++) {
      const inner = await this.evaluate(() => [window.innerWidth, window.innerHeight]);
      if (inner[0] === width && inner[1] === height) return;
      const rect = await win.getRect();
      await win.setRect({ width: rect.width + width - inner[0], height: rect.height + height - inner[1] });
    }
  }

  /** A PNG of the viewport, or of the whole page (`fullPage`, the <html> element's box). */
  async screenshot({ path: file, fullPage = false } = {}) {
    // The viewport's screenshot (Take Screenshot) can be an old paint in WebKitGTK; an
    // element's is current. The <html> element's is clipped to the viewport: for the whole
    // page the window grows to the page's height for the shot.
    const html = await this.driver.findElement(By.css('html'));
    const painted = () => this.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))));
    let png;
    if (fullPage) {
      const [width, height, full] = await this.evaluate(() => [innerWidth, innerHeight, document.documentElement.scrollHeight]);
      if (full > height) await this.setViewportSize({ width, height: full });
      try { await painted(); png = await html.takeScreenshot(); } finally { if (full > height) await this.setViewportSize({ width, height }); }
    } else {
      await painted();
      png = await html.takeScreenshot();
    }
    if (file) fs.writeFileSync(file, Buffer.from(png, 'base64'));
    return Buffer.from(png, 'base64');
  }
}
