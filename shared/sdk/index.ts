// The framework SDK: what a scheduler written against Cairn (or any Mesos v1 master) needs.
//
//   const client = new SchedulerClient({ masterUrl, frameworkInfo: { user: 'me', name: 'my-fw' } });
//   client.on('offers', (offers) => {
//     for (const offer of offers) {
//       const { placed } = fitTasks(offer.resources, wanted);
//       if (placed.length === 0) void client.decline([offer.id.value], 5);
//       else void client.accept([offer.id.value], placed.map((p) => taskInfoFor(offer, p)));
//     }
//   });
//   client.on('update', (status) => { ... });   // acknowledged automatically afterwards
//   await client.subscribe();

export { SchedulerClient, schedulerEndpoint, SCHEDULER_API_PATH } from './scheduler-client.ts';
export type { SchedulerClientOptions, SchedulerClientEvents, SubscribedInfo, FailureInfo } from './scheduler-client.ts';
export { fitTasks, offerRole, requirementResources } from './offer-fit.ts';
export type { TaskRequirement, PlacedTask, OfferFit, FitOptions } from './offer-fit.ts';
// The placement pipeline fitTasks runs on, for a framework that places over several offers.
export { place, countReasons } from '../placement/pipeline.ts';
export type { PlaceRequest, PlaceResult, Placed, Unplaced } from '../placement/pipeline.ts';
export { RESOURCE_CHECKS, roleCheck, constraintCheck, REACHABLE, NOT_DRAINING, shortfall } from '../placement/checks.ts';
export type { Check, Reason } from '../placement/checks.ts';
export { ConstraintTracker } from '../placement/constraints.ts';
export type { Constraint } from '../placement/constraints.ts';
export { demandOf } from '../placement/demand.ts';
export type { Demand } from '../placement/demand.ts';
export type { Candidate } from '../placement/candidate.ts';
export { inGivenOrder, previousAgentFirst, largestFirst } from '../placement/rank.ts';
export { MasterClient } from './master-client.ts';
export type { FollowLogsOptions, LogStream, MasterClientOptions } from './master-client.ts';
export { MasterHttpError, errorFromResponse } from './http-error.ts';
export { TypedEmitter } from './typed-emitter.ts';
