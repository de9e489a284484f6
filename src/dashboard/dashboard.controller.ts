import {
  applyDecorators,
  Body,
  Controller,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  Res,
  Sse,
  UseGuards,
  type CanActivate,
  type Type,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { DASHBOARD_CSS, DASHBOARD_JS } from './dashboard-assets.js';
import { DASHBOARD_OPTIONS } from './dashboard.constants.js';
import { DashboardLive, type DashboardMessage } from './dashboard-live.js';
import { parseListQuery } from './list-query.js';
import type { ResolvedDashboardOptions } from './dashboard-options.js';
import { DashboardService, type DashboardResponse } from './dashboard.service.js';
import { crossOriginRefusal, type RequestHeaders } from './same-origin.js';

/** What the controller reads of a request and writes on a response, on Express and on Fastify alike. */
interface HttpRequest {
  url: string;
  originalUrl?: string;
  /** The connection (a `TLSSocket`, `encrypted`, when the app itself serves https). */
  socket?: { encrypted?: boolean };
}
interface HttpResponse {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
}

/**
 * The pages' headers: only the dashboard's own stylesheet and script may load, forms post only
 * to it, and no other site may frame it (clickjacking).
 */
const CSP =
  "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const PageHeaders = () =>
  applyDecorators(
    Header('Content-Type', 'text/html; charset=utf-8'),
    Header('Content-Security-Policy', CSP),
    Header('X-Content-Type-Options', 'nosniff'),
    Header('X-Frame-Options', 'DENY'),
    Header('Referrer-Policy', 'same-origin'),
    Header('Cache-Control', 'no-store'),
  );

/** The request's path without the query and without `suffix`: the dashboard's base path, whatever prefix the app adds. */
function basePath(request: HttpRequest, suffix: string): string {
  const target = (request.originalUrl ?? request.url).split('?')[0]!;
  // A request line may carry an absolute URL (`GET http://elsewhere/workflows`), which Node hands
  // over as is: only its path may go into the page's links and redirects.
  const path = (target.startsWith('/') ? target : pathOf(target)).replace(/\/+$/, '');
  return suffix && path.endsWith(suffix) ? path.slice(0, -suffix.length) : path;
}

function pathOf(target: string): string {
  try {
    return new URL(target).pathname;
  } catch {
    return '/';
  }
}

function send(response: HttpResponse, result: DashboardResponse): string {
  if ('redirect' in result) {
    response.status(303);
    response.header('Location', result.redirect);
    return '';
  }
  response.status(result.status);
  return result.body.value;
}

/**
 * The dashboard's controller at `path`, behind `guard`. A class made per `forRoot()`, since a
 * controller's path and guards are fixed when its class is decorated.
 */
export function createDashboardController(path: string, guard: Type<CanActivate> | CanActivate | null): Type {
  @Controller(path)
  class WorkflowsDashboardController {
    constructor(
      private readonly service: DashboardService,
      private readonly live: DashboardLive,
      @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    ) {}

    @Get()
    @PageHeaders()
    async list(
      @Query() query: Record<string, unknown>,
      @Req() request: HttpRequest,
      @Res({ passthrough: true }) response: HttpResponse,
    ): Promise<string> {
      return send(response, await this.service.list(basePath(request, ''), query));
    }

    @Get('instance')
    @PageHeaders()
    async instance(
      @Query() query: Record<string, unknown>,
      @Req() request: HttpRequest,
      @Res({ passthrough: true }) response: HttpResponse,
    ): Promise<string> {
      return send(response, await this.service.instance(basePath(request, '/instance'), query));
    }

    @Get('schedules')
    @PageHeaders()
    async schedules(
      @Query() query: Record<string, unknown>,
      @Req() request: HttpRequest,
      @Res({ passthrough: true }) response: HttpResponse,
    ): Promise<string> {
      return send(response, await this.service.schedules(basePath(request, '/schedules'), query));
    }

    @Get('signals')
    @PageHeaders()
    async signals(@Req() request: HttpRequest, @Res({ passthrough: true }) response: HttpResponse): Promise<string> {
      return send(response, await this.service.signals(basePath(request, '/signals')));
    }

    @Get('versions')
    @PageHeaders()
    async versions(@Req() request: HttpRequest, @Res({ passthrough: true }) response: HttpResponse): Promise<string> {
      return send(response, await this.service.versions(basePath(request, '/versions')));
    }

    @Post('actions/:action')
    @HttpCode(200)
    @PageHeaders()
    async act(
      @Param('action') action: string,
      @Body() form: Record<string, unknown> | undefined,
      @Headers() headers: RequestHeaders,
      @Req() request: HttpRequest,
      @Res({ passthrough: true }) response: HttpResponse,
    ): Promise<string> {
      const base = basePath(request, `/actions/${action}`);
      const refusal = crossOriginRefusal(headers, this.options.trustedOrigins, request.socket?.encrypted === true);
      if (refusal !== null)
        return send(
          response,
          this.service.problem(base, 403, `Refused: ${refusal}. Act from the dashboard's own pages.`),
        );
      return send(response, await this.service.act(base, action, form));
    }

    /** `?id=<instance>` for an instance page; `?list=1&<the list's filters>` for the list (no query: unfiltered). */
    @Sse('events')
    events(@Query() query: Record<string, unknown>): Observable<DashboardMessage> {
      const { id, list } = query ?? {};
      if (list !== undefined) return this.live.stream({ list: parseListQuery(query).options });
      return this.live.stream(typeof id === 'string' && id !== '' ? { id } : null);
    }

    @Get('assets/dashboard.css')
    @Header('Content-Type', 'text/css; charset=utf-8')
    @Header('Cache-Control', 'no-cache')
    @Header('X-Content-Type-Options', 'nosniff')
    stylesheet(): string {
      return DASHBOARD_CSS;
    }

    @Get('assets/dashboard.js')
    @Header('Content-Type', 'text/javascript; charset=utf-8')
    @Header('Cache-Control', 'no-cache')
    @Header('X-Content-Type-Options', 'nosniff')
    script(): string {
      return DASHBOARD_JS;
    }
  }
  if (guard !== null) UseGuards(guard)(WorkflowsDashboardController);
  return WorkflowsDashboardController;
}
