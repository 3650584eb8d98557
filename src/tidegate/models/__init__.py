"""Every table, imported in one place so metadata (and Alembic) sees them all."""

from tidegate.models.account import Account
from tidegate.models.account_feature import AccountFeature
from tidegate.models.account_usage import AccountUsage
from tidegate.models.alert_cursor import AlertCursor
from tidegate.models.alert_delivery import AlertDelivery
from tidegate.models.alert_state import AlertState
from tidegate.models.api_key import ApiKey
from tidegate.models.archive import ArchiveConfig, ArchiveDay
from tidegate.models.auth_counter import AuthCounter, SignedNonce
from tidegate.models.base import Base
from tidegate.models.board import Board
from tidegate.models.category import Category
from tidegate.models.enterprise import Enterprise
from tidegate.models.exclusion_rule import ExclusionRule
from tidegate.models.gateway_route import AccessKey, GatewayRoute, SigningKey
from tidegate.models.group import Group, GroupMember
from tidegate.models.index_rate_alert import IndexRateAlert
from tidegate.models.log_line import LogLine
from tidegate.models.log_segment import LogSegment, SegmentLease
from tidegate.models.membership import Membership
from tidegate.models.parsing_template import ParsingTemplate
from tidegate.models.pipeline import Pipeline, PipelineNode, PublishedPipelineNode
from tidegate.models.pipeline_alert import PipelineAlert
from tidegate.models.pipeline_alert_events import PipelineAlertEvents, PipelineAlertWindows
from tidegate.models.pipeline_output_usage import PipelineOutputUsage
from tidegate.models.pipeline_usage import PipelineUsage
from tidegate.models.preset_alert import PresetAlert
from tidegate.models.user import User
from tidegate.models.user_preference import UserPreference
from tidegate.models.user_session import UserSession
from tidegate.models.user_token import UserToken
from tidegate.models.view import View

__all__ = [
    "AccessKey",
    "Account",
    "AccountFeature",
    "AccountUsage",
    "AlertCursor",
    "AlertDelivery",
    "AlertState",
    "ApiKey",
    "ArchiveConfig",
    "ArchiveDay",
    "AuthCounter",
    "Base",
    "Board",
    "Category",
    "Enterprise",
    "ExclusionRule",
    "GatewayRoute",
    "Group",
    "GroupMember",
    "IndexRateAlert",
    "LogLine",
    "LogSegment",
    "Membership",
    "ParsingTemplate",
    "Pipeline",
    "PipelineAlert",
    "PipelineAlertEvents",
    "PipelineAlertWindows",
    "PipelineNode",
    "PipelineOutputUsage",
    "PipelineUsage",
    "PresetAlert",
    "PublishedPipelineNode",
    "SegmentLease",
    "SignedNonce",
    "SigningKey",
    "User",
    "UserPreference",
    "UserSession",
    "UserToken",
    "View",
]
