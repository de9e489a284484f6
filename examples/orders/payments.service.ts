import { Injectable } from '@nestjs/common';

/** What the example's orders carry. */
export interface Order {
  id: string;
  customer: string;
  amount: number;
  /** How many charge attempts the (fake) payment gateway times out before it answers. */
  gatewayHiccups?: number;
}

export interface Charge {
  id: string;
  orderId: string;
  amount: number;
}

/**
 * A stand-in for a payment provider's SDK: charges and refunds, recorded in a ledger so the example
 * can check what really happened. Its gateway fails the first attempts of some orders, the kind of
 * transient failure a step's retry policy exists for.
 */
@Injectable()
export class PaymentsService {
  /** Every call that reached the gateway, in order. */
  readonly ledger: string[] = [];
  private readonly attempts = new Map<string, number>();

  async charge(order: Order): Promise<Charge> {
    const attempt = (this.attempts.get(order.id) ?? 0) + 1;
    this.attempts.set(order.id, attempt);
    if (attempt <= (order.gatewayHiccups ?? 0)) {
      this.ledger.push(`charge ${order.id} attempt ${attempt}: gateway timeout`);
      throw new Error(`Payment gateway timed out charging ${order.id}`);
    }
    const charge = { id: `ch_${order.id}`, orderId: order.id, amount: order.amount };
    this.ledger.push(`charge ${order.id} attempt ${attempt}: ${charge.id} (${order.amount.toFixed(2)} EUR)`);
    return charge;
  }

  async refund(charge: Charge): Promise<void> {
    this.ledger.push(`refund ${charge.id} (${charge.amount.toFixed(2)} EUR)`);
  }

  /** The gateway attempts made for an order. */
  chargeAttempts(orderId: string): number {
    return this.attempts.get(orderId) ?? 0;
  }

  refunds(): string[] {
    return this.ledger.filter((line) => line.startsWith('refund '));
  }
}
