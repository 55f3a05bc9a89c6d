"""The operations costguard calls, by service: what its clients' slim service models keep (aws/clients.py).

A client holds its service's model for the container's life, and costguard calls few of each large
service's operations: 10 of EC2's 830, 22 of SageMaker's 434. A slim model keeps these operations and the
shapes they reach (and every error shape, so that `client.exceptions` is whole), cut from the installed
botocore's own model as it is loaded, so it follows whatever botocore the Lambda runtime provides.

A missing name costs memory, never a call: a slim client asked for an operation its model lacks makes the
full client once and hands the call to it, and logs that it did. tests/unit/aws/test_operations.py scans
the package for every client method, paginator and waiter it names and fails if one of these services
misses it. Services whose whole model is small (Pricing, Savings Plans, SQS, SNS, Secrets Manager, which
Powertools calls for the Slack secret) are not slimmed.
"""

from __future__ import annotations

OPERATIONS: dict[str, frozenset[str]] = {
    "autoscaling": frozenset({"DeleteTags", "DescribeAutoScalingGroups", "SetInstanceProtection"}),
    "ce": frozenset(
        {
            "GetAnomalies",
            "GetAnomalyMonitors",
            "GetCostAndUsage",
            "GetCostForecast",
            "GetReservationCoverage",
            "GetReservationPurchaseRecommendation",
            "GetReservationUtilization",
            "GetSavingsPlansCoverage",
            "GetSavingsPlansPurchaseRecommendation",
            "GetSavingsPlansUtilization",
            "GetSavingsPlansUtilizationDetails",
        }
    ),
    "cloudtrail": frozenset({"AddTags", "ListTags", "LookupEvents"}),
    "cloudwatch": frozenset(
        {"DeleteAlarms", "DescribeAlarms", "GetMetricData", "ListMetrics", "PutDashboard", "PutMetricAlarm"}
    ),
    "dynamodb": frozenset(
        {
            "BatchGetItem",
            "BatchWriteItem",
            "DeleteItem",
            "GetItem",
            "PutItem",
            "Query",
            "TransactWriteItems",
            "UpdateItem",
        }
    ),
    "ec2": frozenset(
        {
            "CreateTags",
            "DeleteTags",
            "DescribeCapacityReservations",
            "DescribeInstances",
            "DescribeReservedInstances",
            "DescribeSpotInstanceRequests",
            "DescribeSpotPriceHistory",
            "DescribeVolumes",
            "StartInstances",
            "StopInstances",
        }
    ),
    "sagemaker": frozenset(
        {
            "AddTags",
            "CreateEndpoint",
            "DeleteApp",
            "DeleteEndpoint",
            "DeleteTags",
            "DescribeApp",
            "DescribeDomain",
            "DescribeEndpoint",
            "DescribeEndpointConfig",
            "DescribeNotebookInstance",
            "DescribeSpace",
            "DescribeUserProfile",
            "ListApps",
            "ListDomains",
            "ListEndpoints",
            "ListNotebookInstances",
            "ListSpaces",
            "ListTags",
            "ListUserProfiles",
            "Search",
            "StartNotebookInstance",
            "StopNotebookInstance",
        }
    ),
    "ssm": frozenset(
        {
            "DescribeInstanceInformation",
            "GetServiceSetting",
            "ListCommandInvocations",
            "ResetServiceSetting",
            "SendCommand",
            "UpdateServiceSetting",
        }
    ),
}
