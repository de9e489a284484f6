// @nestjs/workflows/health: a @nestjs/terminus health indicator. Only this entry loads @nestjs/terminus (an optional peer).
export { WorkflowsHealthIndicator } from '../telemetry/workflows-health.indicator.js';
export type { WorkflowsHealthOptions } from '../telemetry/workflows-health.indicator.js';
