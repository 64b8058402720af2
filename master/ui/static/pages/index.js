// Every page of the dashboard, in the order of the navigation. Each module exports
// `route = { pattern, title, nav? }` (pattern: a RegExp on location.hash) and `Page({ match })`.
import * as cluster from './cluster.js';
import * as agent from './agent.js';
import * as tasks from './tasks.js';
import * as task from './task.js';
import * as services from './services.js';
import * as app from './app.js';
import * as jobs from './jobs.js';
import * as job from './job.js';
import * as experiments from './experiments.js';
import * as experiment from './experiment.js';
import * as tenants from './tenants.js';

export const PAGES = [cluster, agent, tasks, task, services, app, jobs, job, experiments, experiment, tenants];
