import { schedulesScenario } from './schedules-scenario.js';

await schedulesScenario('postgres');
