import type { OpenTelemetryApiModule } from './open-telemetry-observer.js';

/**
 * `@opentelemetry/api` when the application has it installed (it is an optional peer), else
 * `null`: telemetry is then off and costs nothing.
 */
export async function loadOpenTelemetry(): Promise<OpenTelemetryApiModule | null> {
  try {
    const api = (await import('@opentelemetry/api')) as OpenTelemetryApiModule & { default?: OpenTelemetryApiModule };
    // Loaded from CommonJS the namespace may sit under `default`.
    return typeof api.trace?.getTracer === 'function' ? api : (api.default ?? null);
  } catch {
    return null;
  }
}
