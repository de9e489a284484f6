import { multiprocessScenario } from './multiprocess-scenario.js';

await multiprocessScenario('mysql');
