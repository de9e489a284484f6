// Loaded by vitest before every test file (see vitest.config.ts `setupFiles`).
import 'reflect-metadata';
