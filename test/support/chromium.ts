// Headless Chromium for the dashboard's browser tests: Debian's `chromium` package driven by
// playwright-core (which downloads no browser of its own). Missing locally: the browser tests skip,
// saying what they need. Missing on CI (CI=true): they fail (.ci/run installs the package).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether the browser tests of a file run; throws on CI when Chromium is missing. */
export function requireChromium(suite: string): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  const message = `${suite}: needs Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`;
  if (process.env.CI === 'true') throw new Error(`${message}. Failing: CI=true and Chromium is missing.`);
  console.warn(`Skipping ${message}`);
  return false;
}

/** A fresh headless Chromium with its own profile directory, removed again by `close()`. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'nest-workflows-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
