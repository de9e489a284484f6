import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { Injectable } from '@nestjs/common';
import { LEDGER } from './example-files.js';

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
 * A stand-in for a payment provider's SDK: charges and refunds, recorded in a ledger file (the
 * provider's own records, which outlive a run of the example) so the example can check what really
 * happened. Its gateway fails the first attempts of some orders, the kind of transient failure a
 * step's retry policy exists for.
 */
@Injectable()
export class PaymentsService {
  /** Every call that reached the gateway, in order, this run and the earlier ones. */
  get ledger(): string[] {
    return existsSync(LEDGER) ? readFileSync(LEDGER, 'utf8').split('\n').filter(Boolean) : [];
  }

  async charge(order: Order): Promise<Charge> {
    const attempt = this.chargeAttempts(order.id) + 1;
    if (attempt <= (order.gatewayHiccups ?? 0)) {
      this.record(`charge ${order.id} attempt ${attempt}: gateway timeout`);
      throw new Error(`Payment gateway timed out charging ${order.id}`);
    }
    const charge = { id: `ch_${order.id}`, orderId: order.id, amount: order.amount };
    this.record(`charge ${order.id} attempt ${attempt}: ${charge.id} (${order.amount.toFixed(2)} EUR)`);
    return charge;
  }

  async refund(charge: Charge): Promise<void> {
    this.record(`refund ${charge.id} (${charge.amount.toFixed(2)} EUR)`);
  }

  /** The gateway attempts made for an order. */
  chargeAttempts(orderId: string): number {
    return this.ledger.filter((line) => line.startsWith(`charge ${orderId} `)).length;
  }

  refunds(): string[] {
    return this.ledger.filter((line) => line.startsWith('refund '));
  }

  private record(line: string): void {
    appendFileSync(LEDGER, `${line}\n`);
  }
}
