import {
  Workflow,
  WorkflowSignal,
  type Duration,
  type WorkflowContext,
  type WorkflowDefinition,
} from '@nestjs/workflows';
import { PaymentsService, type Charge, type Order } from './payments.service.js';

/** Sent by the carrier integration when a parcel is delivered; keyed by the order id. */
export const delivered = new WorkflowSignal<{ at: string; signedBy: string }>('shipment.delivered');

export interface FulfilOrderInput extends Order {
  /** How long to wait for the delivery signal before giving up (and refunding). */
  deliveryWindow: Duration;
}

export interface Receipt {
  orderId: string;
  chargeId: string;
  trackingNumber: string;
  deliveredAt: string;
  signedBy: string;
}

/**
 * Charge, cool off, ship, wait for delivery. If delivery never comes, the wait times out, `run()`
 * throws, and the engine runs the compensations of the completed steps: the charge is refunded.
 */
@Workflow('orders.fulfil', { version: 1, timeout: '1m' })
export class FulfilOrder implements WorkflowDefinition<FulfilOrderInput, Receipt> {
  constructor(private readonly payments: PaymentsService) {}

  async run(ctx: WorkflowContext, order: FulfilOrderInput): Promise<Receipt> {
    ctx.setStatus({ stage: 'charging' });
    const charge = await ctx.step<Charge>('charge', () => this.payments.charge(order), {
      retry: { attempts: 4, backoff: '200ms', factor: 1 },
      compensate: (done) => this.payments.refund(done),
    });

    ctx.setStatus({ stage: 'cooling-off', chargeId: charge.id });
    await ctx.sleep('cool-off', '300ms');

    const shipment = await ctx.step('ship', () => ({ trackingNumber: `TRK-${order.id.toUpperCase()}` }));
    ctx.setStatus({ stage: 'awaiting-delivery', trackingNumber: shipment.trackingNumber });

    const proof = await ctx.waitForSignal('delivery', delivered, { key: order.id, timeout: order.deliveryWindow });
    ctx.setStatus({ stage: 'delivered', trackingNumber: shipment.trackingNumber });
    return {
      orderId: order.id,
      chargeId: charge.id,
      trackingNumber: shipment.trackingNumber,
      deliveredAt: proof.at,
      signedBy: proof.signedBy,
    };
  }
}
