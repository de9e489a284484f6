import { deployScenario } from './deploy-scenario.js';

await deployScenario('mysql');
