// The OpenTelemetry SDK with in-memory exporters, registered globally for one test file (vitest runs
// each file in its own process): what an application's SDK setup does, minus the network.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

export function installOpenTelemetry() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);

  /** Every metric point exported by a collection now, by metric name. */
  async function collect(): Promise<Map<string, Array<DataPoint<number | Histogram>>>> {
    metricExporter.reset();
    await reader.forceFlush();
    const byName = new Map<string, Array<DataPoint<number | Histogram>>>();
    for (const resource of metricExporter.getMetrics()) {
      for (const scope of resource.scopeMetrics) {
        for (const metric of scope.metrics)
          byName.set(metric.descriptor.name, metric.dataPoints as Array<DataPoint<number | Histogram>>);
      }
    }
    return byName;
  }

  return {
    spans: () => spans.getFinishedSpans() as ReadableSpan[],
    resetSpans: () => spans.reset(),
    collect,
  };
}
